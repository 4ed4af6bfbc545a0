package pace

import (
	"context"
	"testing"
	"time"
)

// work does n units, checking p every 64 of them, and returns its wall time.
func work(p *Pacer, n int) time.Duration {
	start := time.Now()
	x := 1
	for i := range n {
		x = x*31 + i
		p.Step()
	}
	sink = x
	return time.Since(start)
}

var sink int

// units calibrates a piece of work that takes about d unpaced.
func units(d time.Duration) int {
	n := 1 << 16
	for work(nil, n) < d {
		n *= 2
	}
	return n
}

// TestPacerSpreadsWork: the same work, paced at a share, takes about 1/share
// of its unpaced wall time; a share of 1 is a nil Pacer, which never pauses.
// The bounds are loose (a shared machine); what matters is that it pauses.
func TestPacerSpreadsWork(t *testing.T) {
	n := units(30 * time.Millisecond)
	for _, c := range []struct {
		share    float64
		min, max float64
	}{
		{0.5, 1.4, 6},
		{0.25, 2.5, 12},
	} {
		bare := work(nil, n)
		paced := work(New(context.Background(), c.share, time.Millisecond), n)
		if r := float64(paced) / float64(bare); r < c.min || r > c.max {
			t.Errorf("share %v: paced %v, unpaced %v (×%.2f), want ×%.1f–%.1f", c.share, paced, bare, r, c.min, c.max)
		}
	}
	if p := New(context.Background(), 1, time.Millisecond); p != nil {
		t.Errorf("New(share 1) = %v, want nil", p)
	}
	var p *Pacer
	p.Step() // a nil Pacer is valid and never pauses
	p.Check()
}

// TestPacerStopsPausingWhenDone: a pause ends with the work's context.
func TestPacerStopsPausingWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := New(ctx, 0.001, time.Millisecond) // pauses of about a second
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	time.Sleep(2 * time.Millisecond) // the burst is over
	p.Check()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Check paused %v after the context was done", d)
	}
}

func TestContext(t *testing.T) {
	if FromContext(context.Background()) != nil {
		t.Error("a bare context carries a Pacer")
	}
	p := New(context.Background(), 0.5, time.Millisecond)
	if FromContext(NewContext(context.Background(), p)) != p {
		t.Error("FromContext does not give back the Pacer of NewContext")
	}
}
