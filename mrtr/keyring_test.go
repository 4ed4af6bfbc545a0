package mrtr_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestParseKeyRing(t *testing.T) {
	k1 := sha256.Sum256([]byte("one"))
	k2 := sha256.Sum256([]byte("two"))
	std := base64.StdEncoding.EncodeToString(k1[:])
	url := base64.RawURLEncoding.EncodeToString(k2[:])
	tests := []struct {
		name, spec string
		sealer     string // "" when parsing must fail
	}{
		{"one std", "k1:" + std, "k1"},
		{"two, newest first", "new:" + url + ",old:" + std, "new"},
		{"spaces", " a : " + std + " , b:" + url + " ", "a"},
		{"unpadded std", "k1:" + strings.TrimRight(std, "="), "k1"},
		{"padded url", "k1:" + base64.URLEncoding.EncodeToString(k2[:]), "k1"},
		{"empty", "", ""},
		{"no colon", std, ""},
		{"empty id", ":" + std, ""},
		{"dot in id", "a.b:" + std, ""},
		{"long id", strings.Repeat("a", 33) + ":" + std, ""},
		{"duplicate id", "a:" + std + ",a:" + url, ""},
		{"short key", "a:" + base64.StdEncoding.EncodeToString(k1[:16]), ""},
		{"long key", "a:" + base64.StdEncoding.EncodeToString(append(k1[:], 0)), ""},
		{"not base64", "a:" + std[:40] + "!!" + std[42:], ""},
		{"trailing comma", "a:" + std + ",", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring, err := mrtr.ParseKeyRing(tt.spec)
			if tt.sealer == "" {
				if err == nil {
					t.Fatal("parsed")
				}
				if strings.Contains(err.Error(), std[:20]) || strings.Contains(err.Error(), url[:20]) {
					t.Errorf("error leaks key material: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			token := pause(t, testCodec(t, ring, mrtr.Options{}), alice, nil, 0)
			if !strings.HasPrefix(token, "v1."+tt.sealer+".") {
				t.Errorf("sealed with %q, want %q", token[:8], tt.sealer)
			}
		})
	}
}

// TestParsedKeysAreTheKeys checks that the parsed bytes, not merely some
// bytes, become the key: a ring built directly opens the parsed ring's token.
func TestParsedKeysAreTheKeys(t *testing.T) {
	secret := sha256.Sum256([]byte("one"))
	parsed, err := mrtr.ParseKeyRing("k:" + base64.RawURLEncoding.EncodeToString(secret[:]))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := mrtr.NewKeyRing(mrtr.Key{ID: "k", Secret: secret[:]})
	if err != nil {
		t.Fatal(err)
	}
	token := pause(t, testCodec(t, parsed, mrtr.Options{}), alice, nil, 0)
	if _, err := testCodec(t, direct, mrtr.Options{}).Open(t.Context(), token, alice); err != nil {
		t.Fatal(err)
	}
}

func TestNewKeyRingErrors(t *testing.T) {
	if _, err := mrtr.NewKeyRing(); err == nil {
		t.Error("empty ring accepted")
	}
	if _, err := mrtr.NewKeyRing(mrtr.Key{ID: "a", Secret: make([]byte, 16)}); err == nil {
		t.Error("AES-128 key accepted")
	}
}

func TestKeyRingFromEnv(t *testing.T) {
	secret := sha256.Sum256([]byte("env"))
	t.Run("set", func(t *testing.T) {
		t.Setenv(mrtr.EnvKeys, "envkey:"+base64.StdEncoding.EncodeToString(secret[:]))
		var log bytes.Buffer
		ring, err := mrtr.KeyRingFromEnv(slog.New(slog.NewTextHandler(&log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if token := pause(t, testCodec(t, ring, mrtr.Options{}), alice, nil, 0); !strings.HasPrefix(token, "v1.envkey.") {
			t.Errorf("token %q", token)
		}
		if log.Len() != 0 {
			t.Errorf("configured keys logged a warning: %s", log.String())
		}
	})
	t.Run("invalid", func(t *testing.T) {
		t.Setenv(mrtr.EnvKeys, "envkey:short")
		if _, err := mrtr.KeyRingFromEnv(discard()); err == nil || !strings.Contains(err.Error(), mrtr.EnvKeys) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unset generates and warns", func(t *testing.T) {
		t.Setenv(mrtr.EnvKeys, "")
		var log bytes.Buffer
		ring, err := mrtr.KeyRingFromEnv(slog.New(slog.NewTextHandler(&log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if token := pause(t, testCodec(t, ring, mrtr.Options{}), alice, nil, 0); !strings.HasPrefix(token, "v1.gen-") {
			t.Errorf("token %q", token)
		}
		out := log.String()
		if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "another replica") || !strings.Contains(out, "restart") {
			t.Errorf("warning = %q", out)
		}
	})
}
