package connect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/secretbox"
)

// Key names one grant: the user's grant to one API. Subject and Tenant are
// the caller's, as the gateway's authentication resolved them
// (mcp.Principal); the subject is never empty.
type Key struct {
	API     string
	Tenant  string
	Subject string
}

func (k Key) String() string { return k.API + "/" + k.Tenant + "/" + k.Subject }

// aad binds a sealed grant to its row.
func (k Key) aad() []byte { return secretbox.AAD("oauth-grant", k.API, k.Tenant, k.Subject) }

// Record is one stored grant row. Sealed holds the tokens (secretbox, bound
// to Key); the other fields are plain metadata for listing and for the
// refresh protocol.
type Record struct {
	Key Key
	// Sealed is the [secretbox] record of the tokens. List leaves it nil.
	Sealed []byte
	// KeyID names the ring key Sealed was sealed with (for rotation).
	KeyID string
	// Scopes are the scopes the authorization server granted, as it said.
	Scopes string
	// Expiry is when the access token expires (zero: unknown).
	Expiry time.Time
	// Refreshable is true when a refresh token is stored.
	Refreshable bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Version grows by one on every write; Update and Delete compare it.
	Version int64
}

// Filter selects grants for List; an empty field matches any value.
type Filter struct {
	API, Tenant, Subject string
	// Limit bounds the rows returned (0: DefaultListLimit).
	Limit int
}

// DefaultListLimit bounds a List without a Limit.
const DefaultListLimit = 1000

// Store keeps grant rows. Implementations: [MemoryStore] here, and the
// SQLite and PostgreSQL stores (sqlite.NewGrantStore, postgres.NewGrantStore),
// which every replica shares. A Store never sees a token in the clear.
type Store interface {
	// Get returns the row of k, or ErrNoGrant.
	Get(ctx context.Context, k Key) (Record, error)
	// Put inserts or replaces the row of r.Key (a completed authorization)
	// and returns it as stored: Version one more than the row it replaced
	// (1 for a new row), CreatedAt kept from it, any refresh lease cleared.
	Put(ctx context.Context, r Record) (Record, error)
	// Update replaces the row of r.Key only if its version is still
	// r.Version (a refresh), storing r with Version+1 and clearing the
	// refresh lease; it reports whether it did.
	Update(ctx context.Context, r Record) (bool, error)
	// Lease gives the caller the right to refresh the row of k at version
	// until the given time, if the row is at version and no unexpired lease
	// is held (as of now); it reports whether the caller got it. Leases keep
	// replicas from spending one refresh token twice.
	Lease(ctx context.Context, k Key, version int64, until, now time.Time) (bool, error)
	// Delete removes the row of k if its version is version (0: any) and
	// reports whether a row was removed.
	Delete(ctx context.Context, k Key, version int64) (bool, error)
	// List returns the rows f selects without their Sealed bytes, ordered
	// by API, tenant and subject.
	List(ctx context.Context, f Filter) ([]Record, error)
}

// ErrNoGrant: the caller has no grant for the API (never had one, revoked,
// or dropped after a refresh the authorization server refused).
var ErrNoGrant = errors.New("connect: no grant")

// tokens is the sealed content of a grant.
type tokens struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// fromOAuth is what a grant keeps of an OAuth token. Its expiry is counted
// from now, the connector's clock, when the server said expires_in (oauth2
// counts it from the wall clock): a grant's lifetime and the checks of it
// (due, expired) then read one clock.
func fromOAuth(t *oauth2.Token, now time.Time) tokens {
	expiry := t.Expiry
	if t.ExpiresIn > 0 {
		expiry = now.Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	return tokens{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: expiry}
}

// vault seals tokens into records and opens them.
type vault struct {
	box   *secretbox.Box
	store Store
}

// seal builds the record of tokens for k.
func (v *vault) seal(k Key, t tokens, scopes string) (Record, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return Record{}, fmt.Errorf("connect: encode grant: %w", err)
	}
	defer clear(plain)
	sealed, err := v.box.Seal(plain, k.aad())
	if err != nil {
		return Record{}, fmt.Errorf("connect: seal grant: %w", err)
	}
	return Record{Key: k, Sealed: sealed, KeyID: v.box.SealingKeyID(), Scopes: scopes, Expiry: t.Expiry, Refreshable: t.RefreshToken != ""}, nil
}

// open returns the tokens of r. A record that does not open is an error
// naming the grant, never a silent "no grant".
func (v *vault) open(r Record) (tokens, error) {
	plain, err := v.box.Open(r.Sealed, r.Key.aad())
	if err != nil {
		return tokens{}, fmt.Errorf("connect: grant %s: %w", r.Key, err)
	}
	defer clear(plain)
	var t tokens
	if err := json.Unmarshal(plain, &t); err != nil {
		return tokens{}, fmt.Errorf("connect: grant %s: decode: %w", r.Key, err)
	}
	return t, nil
}

// MemoryStore is a [Store] in process memory: for tests and a single
// development process (grants die with it and replicas do not share them).
// Its zero value is ready; it is safe for concurrent use.
type MemoryStore struct {
	mu   sync.Mutex
	rows map[Key]*memRow
	// Now is the clock of CreatedAt and UpdatedAt; nil means time.Now.
	Now func() time.Time
}

type memRow struct {
	r     Record
	lease time.Time
}

var _ Store = (*MemoryStore)(nil)

func (m *MemoryStore) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Get implements [Store].
func (m *MemoryStore) Get(_ context.Context, k Key) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	row, ok := m.rows[k]
	if !ok {
		return Record{}, ErrNoGrant
	}
	r := row.r
	r.Sealed = slices.Clone(r.Sealed)
	return r, nil
}

// Put implements [Store].
func (m *MemoryStore) Put(_ context.Context, r Record) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[Key]*memRow{}
	}
	now := m.now()
	r.Sealed = slices.Clone(r.Sealed)
	r.CreatedAt, r.UpdatedAt, r.Version = now, now, 1
	if old, ok := m.rows[r.Key]; ok {
		r.CreatedAt, r.Version = old.r.CreatedAt, old.r.Version+1
	}
	m.rows[r.Key] = &memRow{r: r}
	return r, nil
}

// Update implements [Store].
func (m *MemoryStore) Update(_ context.Context, r Record) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rows[r.Key]
	if !ok || old.r.Version != r.Version {
		return false, nil
	}
	r.Sealed = slices.Clone(r.Sealed)
	r.CreatedAt, r.UpdatedAt, r.Version = old.r.CreatedAt, m.now(), r.Version+1
	m.rows[r.Key] = &memRow{r: r}
	return true, nil
}

// Lease implements [Store].
func (m *MemoryStore) Lease(_ context.Context, k Key, version int64, until, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	row, ok := m.rows[k]
	if !ok || row.r.Version != version || now.Before(row.lease) {
		return false, nil
	}
	row.lease = until
	return true, nil
}

// Delete implements [Store].
func (m *MemoryStore) Delete(_ context.Context, k Key, version int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	row, ok := m.rows[k]
	if !ok || version != 0 && row.r.Version != version {
		return false, nil
	}
	delete(m.rows, k)
	return true, nil
}

// List implements [Store].
func (m *MemoryStore) List(_ context.Context, f Filter) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for k, row := range m.rows {
		if f.matches(k) {
			r := row.r
			r.Sealed = nil
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Key.API, b.Key.API), cmp.Compare(a.Key.Tenant, b.Key.Tenant), cmp.Compare(a.Key.Subject, b.Key.Subject))
	})
	if limit := f.EffectiveLimit(); len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f Filter) matches(k Key) bool {
	return (f.API == "" || f.API == k.API) && (f.Tenant == "" || f.Tenant == k.Tenant) && (f.Subject == "" || f.Subject == k.Subject)
}

// EffectiveLimit is the row bound stores apply: f.Limit, or
// DefaultListLimit when f.Limit is not positive.
func (f Filter) EffectiveLimit() int {
	if f.Limit <= 0 {
		return DefaultListLimit
	}
	return f.Limit
}
