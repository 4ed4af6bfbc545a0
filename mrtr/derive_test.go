package mrtr_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
)

// TestDeriveKeys pins the HKDF derivation (records sealed with derived keys
// must open after an upgrade) and checks that purposes and keys stay apart.
func TestDeriveKeys(t *testing.T) {
	secret := make([]byte, mrtr.KeySize)
	for i := range secret {
		secret[i] = byte(i)
	}
	other := bytes.Repeat([]byte{7}, mrtr.KeySize)
	ring, err := mrtr.NewKeyRing(mrtr.Key{ID: "new", Secret: other}, mrtr.Key{ID: "old", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ring.DeriveKeys("grant")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != "new" || keys[1].ID != "old" {
		t.Fatalf("ids %v, want [new old] in ring order", []string{keys[0].ID, keys[1].ID})
	}
	// HKDF-SHA256(salt "mcpgate/keyring/v1", info "mcpgate/derive/v1\x00grant"), computed independently.
	const want = "ab663a1f7c00095a79eb2b9fba97e044c6f44ba773df4e6b2e85d6e15e6b48a7"
	if got := hex.EncodeToString(keys[1].Secret); got != want {
		t.Errorf("derived key %s, want %s", got, want)
	}
	again, _ := ring.DeriveKeys("grant")
	task, _ := ring.DeriveKeys("task")
	for i := range keys {
		if !bytes.Equal(keys[i].Secret, again[i].Secret) {
			t.Errorf("key %d: derivation is not deterministic", i)
		}
		if bytes.Equal(keys[i].Secret, task[i].Secret) {
			t.Errorf("key %d: purposes grant and task derive the same key", i)
		}
		if len(keys[i].Secret) != mrtr.KeySize {
			t.Errorf("key %d: %d bytes", i, len(keys[i].Secret))
		}
	}
	if bytes.Equal(keys[1].Secret, secret) || bytes.Equal(keys[0].Secret, keys[1].Secret) {
		t.Error("a derived key equals its ring key or another key's")
	}
	if _, err := ring.DeriveKeys(""); err == nil {
		t.Error("an empty purpose derived keys")
	}
}
