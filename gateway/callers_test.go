package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
)

// TestCallerIDs: a caller's subject is a keyed hash of its token: not the
// plain hash (which anyone holding the store could test guesses against),
// the same on replicas sharing the key ring and after a key is added, and
// different under another ring.
func TestCallerIDs(t *testing.T) {
	ids := func(ring string) callerIDs {
		r, err := mrtr.ParseKeyRing(ring)
		if err != nil {
			t.Fatal(err)
		}
		c, err := newCallerIDs(r)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	k1 := "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	k2 := "k2:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))
	p := ids(k1).principal("demo-token")
	plain := sha256.Sum256([]byte("demo-token"))
	if p.Subject == "bearer:"+base64.RawURLEncoding.EncodeToString(plain[:16]) || !strings.HasPrefix(p.Subject, "bearer:") {
		t.Errorf("subject %s is the unkeyed hash of the token", p.Subject)
	}
	if p.Credential.Reveal() != "demo-token" {
		t.Error("the credential is not the token")
	}
	if ids(k1).principal("demo-token").Subject != p.Subject || ids(k2+","+k1).principal("demo-token").Subject != p.Subject {
		t.Error("the subject changed between replicas or when a key was added")
	}
	if ids(k2).principal("demo-token").Subject == p.Subject || ids(k1).principal("other").Subject == p.Subject {
		t.Error("another ring or another token gave the same subject")
	}
}

// TestCallerIDsPooled: the pooled HMACs give exactly the one-shot keyed
// hash (a subject binds stored tasks and sealed state, so it must never
// change), for the subject and the log name alike, also when many calls
// share the pool at once.
func TestCallerIDsPooled(t *testing.T) {
	r, err := mrtr.ParseKeyRing("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32))))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCallerIDs(r)
	if err != nil {
		t.Fatal(err)
	}
	oneShot := func(msg string, n int) string {
		m := hmac.New(sha256.New, c.key)
		m.Write([]byte(msg))
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:n])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tok := fmt.Sprintf("token-%d-%d", g, i%7)
				if got, want := c.principal(tok).Subject, "bearer:"+oneShot(tok, 16); got != want {
					t.Errorf("principal(%q).Subject = %q, want %q", tok, got, want)
					return
				}
				if got, want := c.logName("bearer:x"+tok), oneShot("log\x00bearer:x"+tok, 9); got != want {
					t.Errorf("logName = %q, want %q", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.logName("") != "anonymous" {
		t.Error("an empty subject is not logged as anonymous")
	}
}
