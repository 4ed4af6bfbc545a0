package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, 100, 2, 2, 3}, 2}, // an outlier does not move it
	}
	for _, c := range cases {
		in := append([]float64(nil), c.in...)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input: %v", in)
			}
		}
	}
}

func run5(label string, c int, rps, p99, cpu []float64) []summary {
	var out []summary
	for i := range rps {
		out = append(out, summary{Label: label, Clients: c, Round: i + 1, RPS: rps[i], P99ms: p99[i],
			CPUPerReq: map[string]float64{"srv": cpu[i]}})
	}
	return out
}

func TestRatioSpread(t *testing.T) {
	base := run5("revproxy", 16, []float64{100, 200, 100, 100, 100}, []float64{1, 1, 1, 1, 1}, []float64{10, 10, 10, 10, 10})
	target := run5("gateway", 16, []float64{90, 220, 80, 100, 120}, []float64{2, 0.5, 1, 1.5, 0.9}, []float64{9, 12, 10, 8, 11})

	sp := ratioSpread(target, base, rps, higher)
	want := spread{median: 1, min: 0.8, max: 1.2, wins: 2, rounds: 5} // 0.9 1.1 0.8 1.0 1.2
	if !near(sp, want) {
		t.Errorf("rps spread %+v, want %+v", sp, want)
	}
	sp = ratioSpread(target, base, p99, lower)
	want = spread{median: 1, min: 0.5, max: 2, wins: 2, rounds: 5}
	if !near(sp, want) {
		t.Errorf("p99 spread %+v, want %+v", sp, want)
	}
	if got := sp.String(); got != "1.00 (0.50–2.00) 2/5" {
		t.Errorf("String() = %q", got)
	}

	// A round the base lacks (or with no figure) is left out, not paired
	// with another round.
	sp = ratioSpread(target, base[:3], rps, higher)
	if sp.rounds != 3 || sp.min < 0.79 || sp.max > 1.11 {
		t.Errorf("three base rounds: %+v", sp)
	}
	noCPU := append([]summary(nil), target...)
	noCPU[0].CPUPerReq = nil
	if sp := ratioSpread(noCPU, base, srvCPU, lower); sp.rounds != 4 {
		t.Errorf("a run without CPU figures was paired: %+v", sp)
	}
	if got := ratioSpread(target, nil, rps, higher).String(); got != "-" {
		t.Errorf("no base: %q", got)
	}
}

func near(a, b spread) bool {
	const eps = 1e-9
	d := func(x, y float64) bool { return x-y < eps && y-x < eps }
	return d(a.median, b.median) && d(a.min, b.min) && d(a.max, b.max) && a.wins == b.wins && a.rounds == b.rounds
}

func writeLines(t *testing.T, runs ...[]summary) string {
	t.Helper()
	var b bytes.Buffer
	for _, rs := range runs {
		for _, r := range rs {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteString("\n\n") // blank lines are allowed
		}
	}
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReport(t *testing.T) {
	base := run5("revproxy", 16, []float64{100, 200, 100, 100, 100}, []float64{1, 1, 1, 1, 1}, []float64{10, 10, 10, 10, 10})
	target := run5("gateway", 16, []float64{90, 220, 80, 100, 120}, []float64{2, 0.5, 1, 1.5, 0.9}, []float64{9, 12, 10, 8, 11})
	for i := range target {
		target[i].AllocsPerReq = map[string]float64{"srv": 100 + float64(i)}
		target[i].BytesPerReq = map[string]float64{"srv": 10240}
		target[i].Load1 = float64(i + 1)
	}
	target[2].Errors = 3
	other := run5("direct", 1, []float64{500}, []float64{0.1}, []float64{5}) // no base at c=1
	path := writeLines(t, base, target, other)

	var out bytes.Buffer
	if err := run(t.Context(), []string{"report", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"load average (1 min) at the end of each run: median 3.0, 1.0–5.0",
		"1.00 (0.80–1.20) 2/5", // rps
		"1.00 (0.50–2.00) 2/5", // p99
		"1.00 (0.80–1.20) 2/5", // cpu: 0.9 1.2 1.0 0.8 1.1
		"gateway  c=16   0.90  1.10  0.80  1.00  1.20",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// The medians row of the gateway: 5 rounds, 3 errors, median rps 100,
	// 102 allocs and 10.0 KB per request.
	row := lineWith(got, "gateway", "102")
	for _, f := range []string{" 16 ", " 5 ", " 3 ", " 100 ", " 10 ", " 102 ", " 10.0 "} {
		if !strings.Contains(row+" ", f) {
			t.Errorf("gateway medians row %q lacks %q", row, f)
		}
	}
	if lineWith(got, "direct", "c=1") != "" {
		t.Errorf("a target without a base at its client count got ratios:\n%s", got)
	}
}

// lineWith returns the first line holding all the words.
func lineWith(text string, words ...string) string {
next:
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		return l
	}
	return ""
}

func TestReportRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"not json":   "{\"label\":\"a\",\"clients\":1}\nnot json\n",
		"no label":   "{\"clients\":1,\"rps\":5}\n",
		"no clients": "{\"label\":\"a\"}\n",
		"empty":      "\n\n",
	}
	for name, text := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		err := run(t.Context(), []string{"report", path}, io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if name == "not json" && !strings.Contains(err.Error(), path+":2:") {
			t.Errorf("%s: error %q does not name the file and line", name, err)
		}
	}
	if err := run(t.Context(), []string{"report", filepath.Join(dir, "missing")}, io.Discard, io.Discard); err == nil {
		t.Error("a missing file was accepted")
	}
}
