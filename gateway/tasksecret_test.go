package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
)

func stateKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

func TestStateKeySealer(t *testing.T) {
	k1, k2 := stateKey(), stateKey()
	old, err := newStateKeySealer("k1:" + k1)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := newStateKeySealer("k2:" + k2 + ", k1:" + k1)
	if err != nil {
		t.Fatal(err)
	}
	aad := []byte("task alice createReport")
	sealed, err := old.Seal([]byte("Bearer tok"), aad)
	if err != nil || bytes.Contains(sealed, []byte("tok")) {
		t.Fatalf("seal: %q %v", sealed, err)
	}
	if p, err := rotated.Open(sealed, aad); err != nil || string(p) != "Bearer tok" {
		t.Fatalf("a rotated ring opens what the old key sealed: %q %v", p, err)
	}
	resealed, _ := rotated.Seal([]byte("Bearer tok"), aad)
	if !bytes.HasPrefix(resealed, []byte("\x02k2")) {
		t.Fatalf("the newest key seals: %q", resealed[:3])
	}
	if _, err := old.Open(resealed, aad); err == nil || !strings.Contains(err.Error(), "not in the ring") {
		t.Fatalf("open with a ring that lacks the key: %v", err)
	}
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	renamed := append([]byte{2, 'k', '2'}, sealed[3:]...) // claims the other key
	for name, c := range map[string]struct {
		sealed, aad []byte
	}{
		"altered":       {tampered, aad},
		"other owner":   {sealed, []byte("task bob createReport")},
		"key id swap":   {renamed, aad},
		"truncated":     {sealed[:2], aad},
		"empty":         {nil, aad},
		"length beyond": {[]byte{9, 'k'}, aad},
	} {
		if _, err := rotated.Open(c.sealed, c.aad); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	// Malformed rings are refused, without key material in the error.
	for _, bad := range []string{"k1", "k1:short", ":" + k1, "k1:" + k1 + ",k2"} {
		if _, err := newStateKeySealer(bad); err == nil || strings.Contains(err.Error(), k1) {
			t.Errorf("newStateKeySealer(%q): %v", bad, err)
		}
	}
	random, _ := newStateKeySealer("")
	if _, err := random.Open(sealed, aad); err == nil {
		t.Error("a random key opened a record of k1")
	}
}
