package mrtr_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
)

func testRing(t testing.TB, ids ...string) *mrtr.KeyRing {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{"k1"}
	}
	var keys []mrtr.Key
	for _, id := range ids {
		secret := sha256.Sum256([]byte("test key " + id))
		keys = append(keys, mrtr.Key{ID: id, Secret: secret[:]})
	}
	ring, err := mrtr.NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func testCodec(t testing.TB, ring *mrtr.KeyRing, opts mrtr.Options) *mrtr.Codec {
	t.Helper()
	if ring == nil {
		ring = testRing(t)
	}
	c, err := mrtr.NewCodec(ring, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var alice = mrtr.Binding{
	Method:    "tools/call",
	Name:      "create_issue",
	Subject:   "user-12",
	Arguments: json.RawMessage(`{"title":"Bug","labels":["a","b"]}`),
}

type progress struct {
	Repo  string `json:"repo"`
	Price int    `json:"price"`
}

// pause seals the round after prev (0: the first pause).
func pause(t *testing.T, c *mrtr.Codec, b mrtr.Binding, cont any, prev int) string {
	t.Helper()
	token, err := c.Seal(b, prev+1, cont)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return token
}

func TestSealOpenRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCodec(t, nil, mrtr.Options{TTL: time.Minute})
		start := time.Now()
		token := pause(t, c, alice, progress{Repo: "acme/api", Price: 42}, 0)
		if !strings.HasPrefix(token, "v1.k1.") {
			t.Errorf("token %q does not start with v1.k1.", token)
		}
		if strings.Contains(token, "acme") {
			t.Errorf("token leaks the continuation: %q", token)
		}

		st, err := c.Open(t.Context(), token, alice)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		wantArgs, _ := mrtr.HashArguments(alice.Arguments)
		subj := sha256.Sum256([]byte("user-12"))
		if st.Method != "tools/call" || st.Name != "create_issue" || st.Round != 1 ||
			!st.ExpiresAt.Equal(start.Add(time.Minute)) || len(st.JTI) != 22 ||
			st.ArgumentsHash != wantArgs ||
			st.SubjectHash != base64.RawURLEncoding.EncodeToString(subj[:]) {
			t.Errorf("state = %+v", st)
		}
		if string(st.Continuation) != `{"repo":"acme/api","price":42}` {
			t.Errorf("continuation = %s", st.Continuation)
		}
		var got progress
		if err := st.Decode(&got); err != nil || got != (progress{"acme/api", 42}) {
			t.Errorf("Decode = %+v, %v", got, err)
		}
		// Without the typed accessor the continuation is generic JSON.
		var generic any
		if err := st.Decode(&generic); err != nil {
			t.Fatal(err)
		}
		if m, ok := generic.(map[string]any); !ok || m["price"] != 42.0 {
			t.Errorf("Decode into any = %#v", generic)
		}
		var wrong []int
		if err := st.Decode(&wrong); err == nil {
			t.Error("Decode into the wrong type succeeded")
		}
	})
}

func TestFreshJTIPerSeal(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	seen := map[string]bool{}
	for range 50 {
		st, err := c.Open(t.Context(), pause(t, c, alice, nil, 0), alice)
		if err != nil {
			t.Fatal(err)
		}
		if seen[st.JTI] {
			t.Fatalf("jti %s repeated", st.JTI)
		}
		seen[st.JTI] = true
	}
}

func TestContinuationForms(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	tests := []struct {
		name string
		cont any
		want string
	}{
		{"nil", nil, ""},
		{"raw", json.RawMessage(` {"a": 1} `), ` {"a": 1} `},
		{"string", "hello", `"hello"`},
		{"map", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := c.Open(t.Context(), pause(t, c, alice, tt.cont, 0), alice)
			if err != nil {
				t.Fatal(err)
			}
			if string(st.Continuation) != tt.want {
				t.Errorf("continuation = %q, want %q", st.Continuation, tt.want)
			}
		})
	}
	t.Run("empty decodes to zero", func(t *testing.T) {
		st, err := c.Open(t.Context(), pause(t, c, alice, nil, 0), alice)
		if err != nil {
			t.Fatal(err)
		}
		var got progress
		if err := st.Decode(&got); err != nil || got != (progress{}) {
			t.Errorf("Decode = %+v, %v", got, err)
		}
	})
}

func TestSealErrors(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{MaxTokenSize: 1024})
	tests := []struct {
		name string
		b    mrtr.Binding
		cont any
		prev int
		want error // nil: any non-rejection error
	}{
		{"invalid raw continuation", alice, json.RawMessage(`{`), 0, nil},
		{"unmarshalable continuation", alice, make(chan int), 0, nil},
		{"round below 1", alice, nil, -1, nil},
		{"invalid arguments", mrtr.Binding{Arguments: json.RawMessage(`{"a":`)}, nil, 0, nil},
		{"duplicate argument names", mrtr.Binding{Arguments: json.RawMessage(`{"a":1,"a":2}`)}, nil, 0, nil},
		{"too large", alice, strings.Repeat("x", 1024), 0, mrtr.ErrStateTooLarge},
		{"round cap", alice, nil, mrtr.DefaultMaxRounds, mrtr.ErrTooManyRounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, err := c.Seal(tt.b, tt.prev+1, tt.cont)
			if err == nil || token != "" {
				t.Fatalf("Seal = %q, %v; want an error", token, err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil && errors.Is(err, mrtr.ErrRejected) {
				t.Errorf("server-side error %v reported as a rejection", err)
			}
		})
	}
}

func TestRoundsUpToTheCap(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{MaxRounds: 3})
	token := pause(t, c, alice, 0, 0)
	for want := 1; want <= 3; want++ {
		st, err := c.Open(t.Context(), token, alice)
		if err != nil {
			t.Fatalf("round %d: %v", want, err)
		}
		var n int
		_ = st.Decode(&n)
		if st.Round != want || n != want-1 {
			t.Fatalf("round = %d, continuation %d; want %d, %d", st.Round, n, want, want-1)
		}
		token, err = c.Seal(alice, st.Round+1, n+1)
		if want == 3 {
			if !errors.Is(err, mrtr.ErrTooManyRounds) {
				t.Fatalf("pause after the last round: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestResumeRejectsRoundAboveCap(t *testing.T) {
	ring := testRing(t)
	lenient := testCodec(t, ring, mrtr.Options{MaxRounds: 20})
	strict := testCodec(t, ring, mrtr.Options{}) // default cap 10
	for prev, want := range map[int]error{9: nil, 10: mrtr.ErrTooManyRounds, 19: mrtr.ErrTooManyRounds} {
		token := pause(t, lenient, alice, nil, prev)
		if _, err := strict.Open(t.Context(), token, alice); err != want {
			t.Errorf("round %d: err = %v, want %v", prev+1, err, want)
		}
	}
}

// TestEveryByteAltered changes every byte of a token, to a byte outside the
// alphabet and to its neighbour inside it; no variant may open.
func TestEveryByteAltered(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	token := pause(t, c, alice, progress{Repo: "acme/api", Price: 42}, 0)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(token) {
		next := alphabet[(strings.IndexByte(alphabet, token[i])+1)%len(alphabet)]
		for _, b := range []byte{token[i] ^ 0x01, next, '\n', '='} {
			if b == token[i] {
				continue
			}
			altered := token[:i] + string(b) + token[i+1:]
			if st, err := c.Open(t.Context(), altered, alice); err != mrtr.ErrInvalid {
				t.Fatalf("byte %d changed to %q: Resume = %v, %v; want ErrInvalid", i, b, st, err)
			}
		}
	}
}

func TestTruncatedAndExtended(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	token := pause(t, c, alice, "x", 0)
	for n := range len(token) {
		if _, err := c.Open(t.Context(), token[:n], alice); err != mrtr.ErrInvalid {
			t.Fatalf("token[:%d]: err = %v", n, err)
		}
	}
	for _, extra := range []string{"A", "AA", "AAAA", ".", "\n", "=", " "} {
		if _, err := c.Open(t.Context(), token+extra, alice); err != mrtr.ErrInvalid {
			t.Errorf("token+%q: err = %v", extra, err)
		}
		if _, err := c.Open(t.Context(), extra+token, alice); err != mrtr.ErrInvalid {
			t.Errorf("%q+token: err = %v", extra, err)
		}
	}
}

func TestSwappedBinding(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	token := pause(t, c, alice, "secret plan", 0)
	with := func(f func(*mrtr.Binding)) mrtr.Binding { b := alice; f(&b); return b }
	tests := []struct {
		name string
		b    mrtr.Binding
		want error
	}{
		{"other tool", with(func(b *mrtr.Binding) { b.Name = "delete_issue" }), mrtr.ErrInvalid},
		{"name prefix", with(func(b *mrtr.Binding) { b.Name = "create_issu" }), mrtr.ErrInvalid},
		{"other method", with(func(b *mrtr.Binding) { b.Method = "prompts/get" }), mrtr.ErrInvalid},
		{"method and name shifted", with(func(b *mrtr.Binding) { b.Method, b.Name = "tools/callc", "reate_issue" }), mrtr.ErrInvalid},
		{"other caller", with(func(b *mrtr.Binding) { b.Subject = "user-13" }), mrtr.ErrWrongCaller},
		{"anonymous caller", with(func(b *mrtr.Binding) { b.Subject = "" }), mrtr.ErrWrongCaller},
		{"other arguments", with(func(b *mrtr.Binding) { b.Arguments = json.RawMessage(`{"title":"Feature","labels":["a","b"]}`) }), mrtr.ErrArgumentsChanged},
		{"arguments dropped", with(func(b *mrtr.Binding) { b.Arguments = nil }), mrtr.ErrArgumentsChanged},
		{"arguments invalid", with(func(b *mrtr.Binding) { b.Arguments = json.RawMessage(`{`) }), mrtr.ErrArgumentsChanged},
		{"arguments reordered", with(func(b *mrtr.Binding) { b.Arguments = json.RawMessage(`{ "labels": ["a", "b"], "title": "\u0042ug" }`) }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := c.Open(t.Context(), token, tt.b)
			if err != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err != nil && st != nil {
				t.Error("state returned with an error")
			}
		})
	}
}

func TestAnonymousAndEmptyArguments(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	anon := mrtr.Binding{Method: "resources/read", Name: "repo://x"}
	token := pause(t, c, anon, nil, 0)
	for _, args := range []string{"", "null", "{}", " { } "} {
		b := anon
		b.Arguments = json.RawMessage(args)
		if _, err := c.Open(t.Context(), token, b); err != nil {
			t.Errorf("arguments %q: %v", args, err)
		}
	}
	b := anon
	b.Subject = "user-12"
	if _, err := c.Open(t.Context(), token, b); err != mrtr.ErrWrongCaller {
		t.Errorf("authenticated caller resumed an anonymous state: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCodec(t, nil, mrtr.Options{TTL: 30 * time.Second})
		token := pause(t, c, alice, nil, 0)
		time.Sleep(30*time.Second - time.Millisecond)
		if _, err := c.Open(t.Context(), token, alice); err != nil {
			t.Fatalf("just before expiry: %v", err)
		}
		time.Sleep(time.Millisecond)
		if _, err := c.Open(t.Context(), token, alice); err != mrtr.ErrExpired {
			t.Fatalf("at expiry: err = %v, want ErrExpired", err)
		}
		// Expiry is checked before the caller: an expired token says so.
		other := alice
		other.Subject = "someone else"
		if _, err := c.Open(t.Context(), token, other); err != mrtr.ErrExpired {
			t.Fatalf("expired, other caller: err = %v", err)
		}
	})
}

func TestDefaultTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCodec(t, nil, mrtr.Options{})
		token := pause(t, c, alice, nil, 0)
		time.Sleep(mrtr.DefaultTTL - time.Second)
		if _, err := c.Open(t.Context(), token, alice); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, err := c.Open(t.Context(), token, alice); err != mrtr.ErrExpired {
			t.Fatalf("err = %v, want ErrExpired", err)
		}
	})
}

func TestInjectedClock(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	c := testCodec(t, nil, mrtr.Options{TTL: time.Minute, Now: func() time.Time { return now }})
	token := pause(t, c, alice, nil, 0)
	now = now.Add(time.Minute)
	if _, err := c.Open(t.Context(), token, alice); err != mrtr.ErrExpired {
		t.Fatalf("err = %v, want ErrExpired", err)
	}
}

func TestReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cache := mrtr.NewMemoryReplayCache(0, nil)
		c := testCodec(t, nil, mrtr.Options{ReplayCache: cache})
		token := pause(t, c, alice, nil, 0)

		// A rejected attempt must not consume the token.
		intruder := alice
		intruder.Subject = "mallory"
		if _, err := c.Open(t.Context(), token, intruder); err != mrtr.ErrWrongCaller {
			t.Fatalf("intruder: %v", err)
		}
		if _, err := c.Open(t.Context(), token, alice); err != nil {
			t.Fatalf("first use: %v", err)
		}
		if _, err := c.Open(t.Context(), token, alice); err != mrtr.ErrReplayed {
			t.Fatalf("second use: err = %v, want ErrReplayed", err)
		}
		// A fresh pause of the same request is a new token.
		if _, err := c.Open(t.Context(), pause(t, c, alice, nil, 0), alice); err != nil {
			t.Fatalf("fresh token: %v", err)
		}
		// Once expired, the cache may forget the jti; the token stays dead.
		time.Sleep(mrtr.DefaultTTL)
		if _, err := c.Open(t.Context(), token, alice); err != mrtr.ErrExpired {
			t.Fatalf("after expiry: %v", err)
		}
	})
}

func TestReplayOffByDefault(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	token := pause(t, c, alice, nil, 0)
	for range 3 {
		if _, err := c.Open(t.Context(), token, alice); err != nil {
			t.Fatal(err)
		}
	}
}

type failingCache struct{}

var errCacheDown = errors.New("cache down")

func (failingCache) Use(context.Context, string, time.Time) (bool, error) { return false, errCacheDown }

func TestReplayCacheFailure(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{ReplayCache: failingCache{}})
	_, err := c.Open(t.Context(), pause(t, c, alice, nil, 0), alice)
	if !errors.Is(err, errCacheDown) || errors.Is(err, mrtr.ErrRejected) {
		t.Fatalf("err = %v; want the cache's error, not a rejection", err)
	}
}

func TestKeyRotation(t *testing.T) {
	old := testCodec(t, testRing(t, "a"), mrtr.Options{})
	rotated := testCodec(t, testRing(t, "b", "a"), mrtr.Options{})
	retired := testCodec(t, testRing(t, "b"), mrtr.Options{})

	oldToken := pause(t, old, alice, nil, 0)
	if _, err := rotated.Open(t.Context(), oldToken, alice); err != nil {
		t.Fatalf("rotated ring cannot open the old key's token: %v", err)
	}
	newToken := pause(t, rotated, alice, nil, 0)
	if !strings.HasPrefix(newToken, "v1.b.") {
		t.Fatalf("rotated ring sealed with the wrong key: %q", newToken)
	}
	if _, err := retired.Open(t.Context(), newToken, alice); err != nil {
		t.Fatalf("new key: %v", err)
	}
	if _, err := retired.Open(t.Context(), oldToken, alice); err != mrtr.ErrInvalid {
		t.Fatalf("retired key: err = %v, want ErrInvalid", err)
	}
}

// TestKeyIDBound relabels a token with another id for the same key bytes: the
// key id is part of the additional data, so it must not open.
func TestKeyIDBound(t *testing.T) {
	secret := sha256.Sum256([]byte("shared"))
	ring, err := mrtr.NewKeyRing(mrtr.Key{ID: "x", Secret: secret[:]}, mrtr.Key{ID: "y", Secret: secret[:]})
	if err != nil {
		t.Fatal(err)
	}
	c := testCodec(t, ring, mrtr.Options{})
	token := pause(t, c, alice, nil, 0)
	relabelled := strings.Replace(token, "v1.x.", "v1.y.", 1)
	if _, err := c.Open(t.Context(), relabelled, alice); err != mrtr.ErrInvalid {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestGeneratedRingsDoNotCross(t *testing.T) {
	a := testCodec(t, mrtr.GenerateKeyRing(discard()), mrtr.Options{})
	b := testCodec(t, mrtr.GenerateKeyRing(discard()), mrtr.Options{})
	token := pause(t, a, alice, nil, 0)
	if _, err := a.Open(t.Context(), token, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(t.Context(), token, alice); err != mrtr.ErrInvalid {
		t.Fatalf("another process's key opened the token: %v", err)
	}
}

func TestTokenSizeLimit(t *testing.T) {
	c := testCodec(t, nil, mrtr.Options{})
	big := pause(t, c, alice, strings.Repeat("x", 8<<10), 0)
	small := testCodec(t, nil, mrtr.Options{MaxTokenSize: len(big) - 1})
	if _, err := c.Open(t.Context(), big, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := small.Open(t.Context(), big, alice); err != mrtr.ErrInvalid {
		t.Fatalf("oversized token: err = %v, want ErrInvalid", err)
	}
	if _, err := c.Seal(alice, 1, strings.Repeat("x", mrtr.DefaultMaxTokenSize)); !errors.Is(err, mrtr.ErrStateTooLarge) {
		t.Fatalf("oversized pause: %v", err)
	}
}

func TestRejectionErrors(t *testing.T) {
	all := []error{mrtr.ErrInvalid, mrtr.ErrExpired, mrtr.ErrWrongCaller, mrtr.ErrTooManyRounds, mrtr.ErrArgumentsChanged, mrtr.ErrReplayed}
	msgs := map[string]bool{}
	for _, err := range all {
		if !errors.Is(err, mrtr.ErrRejected) {
			t.Errorf("%v does not match ErrRejected", err)
		}
		if msgs[err.Error()] {
			t.Errorf("duplicate message %q", err)
		}
		msgs[err.Error()] = true
	}
	// Each reason matches only itself (and ErrRejected).
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
	if errors.Is(mrtr.ErrStateTooLarge, mrtr.ErrRejected) {
		t.Error("ErrStateTooLarge is a server fault, not a rejection")
	}
}

func TestNewCodecErrors(t *testing.T) {
	if _, err := mrtr.NewCodec(nil, mrtr.Options{}); err == nil {
		t.Error("nil ring accepted")
	}
	if _, err := mrtr.NewCodec(testRing(t), mrtr.Options{TTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
}

func TestConcurrentUse(t *testing.T) {
	cache := mrtr.NewMemoryReplayCache(0, nil)
	c := testCodec(t, nil, mrtr.Options{ReplayCache: cache})
	shared := pause(t, c, alice, nil, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				token, err := c.Seal(alice, 1, i)
				if err != nil {
					t.Error(err)
					return
				}
				st, err := c.Open(context.Background(), token, alice)
				var n int
				if err == nil {
					err = st.Decode(&n)
				}
				if err != nil || n != i {
					t.Errorf("resume: %v, %d", err, n)
					return
				}
			}
			if _, err := c.Open(context.Background(), shared, alice); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if err != mrtr.ErrReplayed {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("shared token resumed %d times, want once", wins)
	}
}
