package secretbox_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/secretbox"
)

func key(id string, b byte) mrtr.Key {
	return mrtr.Key{ID: id, Secret: bytes.Repeat([]byte{b}, mrtr.KeySize)}
}

func ring(t testing.TB, keys ...mrtr.Key) *mrtr.KeyRing {
	t.Helper()
	r, err := mrtr.NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func box(t testing.TB, r *mrtr.KeyRing, purpose string) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(r, purpose)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	r := ring(t, key("k1", 1))
	grants := box(t, r, "oauth-grant")
	owner := secretbox.AAD("github", "tenant-a", "alice")
	plain := []byte(`{"access_token":"gho_secret"}`)
	sealed, err := grants.Seal(plain, owner)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("gho_secret")) {
		t.Fatal("the record holds the plaintext")
	}
	if kid, err := grants.KeyID(sealed); err != nil || kid != "k1" {
		t.Fatalf("KeyID = %q, %v; want k1", kid, err)
	}
	got, err := grants.Open(sealed, owner)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Two seals of one value differ (random nonces).
	if again, _ := grants.Seal(plain, owner); bytes.Equal(again, sealed) {
		t.Error("two seals gave the same record")
	}
	// Empty values and empty aad are records like any other.
	empty, err := grants.Seal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := grants.Open(empty, nil); err != nil || len(got) != 0 {
		t.Errorf("empty record: %q, %v", got, err)
	}
	if _, err := grants.Open(empty, []byte{0}); !errors.Is(err, secretbox.ErrInvalid) {
		t.Errorf("empty record opened with another aad: %v", err)
	}
}

// TestOpenRefuses: every altered, misbound or foreign record is refused
// with ErrInvalid or ErrUnknownKey, never opened.
func TestOpenRefuses(t *testing.T) {
	r := ring(t, key("k1", 1))
	grants := box(t, r, "oauth-grant")
	owner := secretbox.AAD("github", "", "alice")
	sealed, err := grants.Seal([]byte("refresh-token"), owner)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	tests := []struct {
		name   string
		box    *secretbox.Box
		sealed []byte
		aad    []byte
		want   error
	}{
		{"other owner", grants, sealed, secretbox.AAD("github", "", "mallory"), secretbox.ErrInvalid},
		{"other api", grants, sealed, secretbox.AAD("slack", "", "alice"), secretbox.ErrInvalid},
		{"fields shifted", grants, sealed, secretbox.AAD("githu", "b", "alice"), secretbox.ErrInvalid},
		{"raw aad instead of AAD()", grants, sealed, []byte("github" + "alice"), secretbox.ErrInvalid},
		{"other purpose", box(t, r, "task-credential"), sealed, owner, secretbox.ErrInvalid},
		{"other ring, same key id", box(t, ring(t, key("k1", 2)), "oauth-grant"), sealed, owner, secretbox.ErrInvalid},
		{"key not in ring", box(t, ring(t, key("k2", 1)), "oauth-grant"), sealed, owner, secretbox.ErrUnknownKey},
		{"version byte", grants, flip(0), owner, secretbox.ErrInvalid},
		{"key id length", grants, flip(1), owner, secretbox.ErrUnknownKey}, // "k1" + a nonce byte
		{"key id", grants, flip(2), owner, secretbox.ErrUnknownKey},
		{"nonce", grants, flip(5), owner, secretbox.ErrInvalid},
		{"ciphertext", grants, flip(len(sealed) - 20), owner, secretbox.ErrInvalid},
		{"tag", grants, flip(len(sealed) - 1), owner, secretbox.ErrInvalid},
		{"truncated", grants, sealed[:len(sealed)-1], owner, secretbox.ErrInvalid},
		{"header only", grants, sealed[:4], owner, secretbox.ErrInvalid},
		{"empty", grants, nil, owner, secretbox.ErrInvalid},
		{"zero key id length", grants, append([]byte{1, 0}, sealed[4:]...), owner, secretbox.ErrInvalid},
		{"extended", grants, append(bytes.Clone(sealed), 0), owner, secretbox.ErrInvalid},
		{"over the bound", grants, make([]byte, secretbox.MaxSize+1), owner, secretbox.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.box.Open(tt.sealed, tt.aad)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tt.want)
			}
			if got != nil {
				t.Errorf("a refused record returned %q", got)
			}
			if strings.Contains(err.Error(), "refresh-token") {
				t.Errorf("error shows the plaintext: %v", err)
			}
		})
	}
}

// TestRotation: the newest key seals, every key opens, Reseal moves a
// record to the newest key, and a ring without the old key refuses it.
func TestRotation(t *testing.T) {
	oldRing := ring(t, key("k1", 1))
	newRing := ring(t, key("k2", 2), key("k1", 1))
	owner := secretbox.AAD("github", "", "alice")
	before := box(t, oldRing, "oauth-grant")
	after := box(t, newRing, "oauth-grant")

	old, err := before.Seal([]byte("v"), owner)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := after.Open(old, owner); err != nil || string(got) != "v" {
		t.Fatalf("new ring opening an old record: %q, %v", got, err)
	}
	if after.SealingKeyID() != "k2" {
		t.Fatalf("SealingKeyID = %q, want k2", after.SealingKeyID())
	}
	moved, resealed, err := after.Reseal(old, owner)
	if err != nil || !resealed {
		t.Fatalf("Reseal = %v, %v", resealed, err)
	}
	if kid, _ := after.KeyID(moved); kid != "k2" {
		t.Errorf("resealed with %q, want k2", kid)
	}
	if got, err := after.Open(moved, owner); err != nil || string(got) != "v" {
		t.Errorf("resealed record: %q, %v", got, err)
	}
	if same, resealed, err := after.Reseal(moved, owner); err != nil || resealed || !bytes.Equal(same, moved) {
		t.Errorf("Reseal of a current record = %v, %v (want it unchanged)", resealed, err)
	}
	if _, _, err := after.Reseal(moved, secretbox.AAD("x")); !errors.Is(err, secretbox.ErrInvalid) {
		t.Errorf("Reseal with the wrong aad: %v", err)
	}
	// Once k1 is dropped, only re-sealed records open.
	dropped := box(t, ring(t, key("k2", 2)), "oauth-grant")
	if _, err := dropped.Open(old, owner); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Errorf("old record after the key was dropped: %v", err)
	}
	if _, err := dropped.Open(moved, owner); err != nil {
		t.Errorf("resealed record after the key was dropped: %v", err)
	}
}

// TestNotARequestState: the subkeys are not the ring keys, so a record and
// a requestState never open as each other, even for the same ring.
func TestNotARequestState(t *testing.T) {
	k := key("k1", 1)
	r := ring(t, k)
	b := box(t, r, "oauth-grant")
	codec, err := mrtr.NewCodec(r, mrtr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bind := mrtr.Binding{Method: "tools/call", Name: "x", Subject: "alice", Arguments: json.RawMessage(`{}`)}
	token, err := codec.Seal(bind, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open([]byte(token), nil); err == nil {
		t.Error("a requestState opened as a record")
	}
	sealed, err := b.Seal([]byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Open(context.Background(), string(sealed), bind); err == nil {
		t.Error("a record resumed as a requestState")
	}
	// Nor does the raw ring key open a record: the key is derived.
	block, _ := aes.NewCipher(k.Secret)
	aead, _ := cipher.NewGCMWithRandomNonce(block)
	kidLen := int(sealed[1])
	if _, err := aead.Open(nil, nil, sealed[2+kidLen:], nil); err == nil {
		t.Error("the ring key itself opens a record")
	}
}

func TestNew(t *testing.T) {
	if _, err := secretbox.New(nil, "x"); err == nil {
		t.Error("New without a ring")
	}
	if _, err := secretbox.New(ring(t, key("k1", 1)), ""); err == nil {
		t.Error("New without a purpose")
	}
	b := box(t, ring(t, key("k1", 1)), "p")
	if b.Purpose() != "p" {
		t.Errorf("Purpose = %q", b.Purpose())
	}
	if _, err := b.Seal(make([]byte, secretbox.MaxSize), nil); err == nil {
		t.Error("sealed a value over the bound")
	}
}

func TestAAD(t *testing.T) {
	tests := []struct{ a, b []string }{
		{[]string{"ab", "c"}, []string{"a", "bc"}},
		{[]string{"a", ""}, []string{"a"}},
		{[]string{""}, nil},
		{[]string{"a\x01b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		if bytes.Equal(secretbox.AAD(tt.a...), secretbox.AAD(tt.b...)) {
			t.Errorf("AAD(%q) == AAD(%q)", tt.a, tt.b)
		}
	}
}

func BenchmarkSealOpen(b *testing.B) {
	bx := box(b, ring(b, key("k1", 1)), "oauth-grant")
	plain := bytes.Repeat([]byte("t"), 512)
	aad := secretbox.AAD("github", "", "alice")
	b.ReportAllocs()
	for b.Loop() {
		s, err := bx.Seal(plain, aad)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bx.Open(s, aad); err != nil {
			b.Fatal(err)
		}
	}
}
