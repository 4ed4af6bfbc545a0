package mrtr

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

func benchCodec(b testing.TB) *Codec {
	secret := sha256.Sum256([]byte("bench"))
	ring, err := NewKeyRing(Key{ID: "k1", Secret: secret[:]})
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCodec(ring, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// continuation1K is a 1 KiB JSON continuation.
var continuation1K = json.RawMessage(`{"pad":"` + strings.Repeat("x", 1024-10) + `"}`)

// BenchmarkSealOpen measures the sealing primitives alone: seal plus open of
// a 1 KiB continuation.
func BenchmarkSealOpen(b *testing.B) {
	c := benchCodec(b)
	r := record{continuation: continuation1K, round: 1, expiresAt: 1 << 40}
	b.ReportAllocs()
	for b.Loop() {
		token, err := c.seal(&r, "tools/call", "create_issue")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.open(token, "tools/call", "create_issue"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPauseResume measures the public round trip with a 1 KiB
// continuation and small arguments, including the arguments hash.
func BenchmarkPauseResume(b *testing.B) {
	c := benchCodec(b)
	bind := Binding{Method: "tools/call", Name: "create_issue", Subject: "user-12",
		Arguments: json.RawMessage(`{"title":"Bug","repo":"acme/api"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		token, err := c.Seal(bind, 1, continuation1K)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Open(ctx, token, bind); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSealOpenLayout(t *testing.T) {
	c := benchCodec(t)
	in := record{expiresAt: 123456789, round: 7, continuation: []byte(`[1]`)}
	in.jti[0], in.args[31], in.subject[5] = 1, 2, 3
	token, err := c.seal(&in, "m", "n")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.open(token, "m", "n")
	if err != nil {
		t.Fatal(err)
	}
	if out.expiresAt != in.expiresAt || out.round != in.round || out.jti != in.jti ||
		out.args != in.args || out.subject != in.subject || string(out.continuation) != "[1]" {
		t.Fatalf("open(seal(r)) = %+v, want %+v", out, in)
	}
	if want := len("v1.k1.") + ((sealOverhead+headerSize+3)*4+2)/3; len(token) != want {
		t.Errorf("token length %d, want %d", len(token), want)
	}
}

// genuineToken was sealed once by benchCodec's key for tools/call "t"
// (continuation {"a":1}, round 1). It is a constant because every fuzz worker
// process would otherwise seal its own, with its own random nonce.
const genuineToken = "v1.k1.jBH4yRjPcEWctcY4JqViWNxHy7bvBgyAZjqgnpvR_BCPlkmPMH53fubye_Y0pShCHKhe_FApOUYima4GmO2ObLKV8tpAu_pr_FsQF8mj9ZYGsGfuO89jabkkdaxslzl-7BXTo-ZA_JOc9jcFg38A3g802qqdNbs4r2wqOTyVng"

// FuzzOpen feeds arbitrary tokens to open: they must never panic and never
// open, except the one genuine token of the seed corpus.
func FuzzOpen(f *testing.F) {
	c := benchCodec(f)
	valid := genuineToken
	for _, s := range []string{valid, "", "v1.", "v1.k1.", "v1.k1.AAAA", "v1.k2." + valid[6:], valid[:len(valid)-1], valid + "A", "v2" + valid[2:]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		r, err := c.open(token, "tools/call", "t")
		if token == valid {
			if err != nil || string(r.continuation) != `{"a":1}` || r.round != 1 {
				t.Fatalf("genuine token: %+v, %v", r, err)
			}
			return
		}
		if err != ErrInvalid {
			t.Fatalf("forged token %q opened: %+v, %v", token, r, err)
		}
	})
}
