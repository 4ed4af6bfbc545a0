package oidctest

import (
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Browser is a user's browser without the browser: a cookie jar that
// follows redirects, except one that StopAt picks.
type Browser struct {
	HTTP *http.Client
	// StopAt, when set, picks a redirect the browser does not follow: the
	// page returned is the redirect itself (its Location says where to).
	StopAt func(*http.Request) bool
}

// NewBrowser returns a browser with an empty cookie jar.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	b := &Browser{}
	b.HTTP = &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if b.StopAt != nil && b.StopAt(req) {
			return http.ErrUseLastResponse
		}
		if len(via) > 20 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	return b
}

// Page is what the browser shows after a request.
type Page struct {
	Status   int
	Body     string
	URL      *url.URL // the page's address
	Location string   // of a redirect the browser stopped at
}

// Do sends req and reads the page it ends on.
func (b *Browser) Do(t testing.TB, req *http.Request) Page {
	t.Helper()
	resp, err := b.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return Page{Status: resp.StatusCode, Body: string(body), URL: resp.Request.URL, Location: resp.Header.Get("Location")}
}

// Get opens u.
func (b *Browser) Get(t testing.TB, u string) Page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Do(t, req)
}

// Post submits form to u.
func (b *Browser) Post(t testing.TB, u string, form url.Values) Page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(t, req)
}

// Cookies are the cookies the browser holds for u.
func (b *Browser) Cookies(u string) []*http.Cookie {
	p, err := url.Parse(u)
	if err != nil {
		return nil
	}
	return b.HTTP.Jar.Cookies(p)
}

// SetCookies puts cookies back for u (a replay, a forged cookie).
func (b *Browser) SetCookies(u string, cookies []*http.Cookie) {
	if p, err := url.Parse(u); err == nil {
		b.HTTP.Jar.SetCookies(p, cookies)
	}
}

var actionPattern = regexp.MustCompile(`action="([^"]+)"`)

// FormAction is the absolute URL the first form of p posts to, or "".
func FormAction(p Page) string {
	m := actionPattern.FindStringSubmatch(p.Body)
	if m == nil || p.URL == nil {
		return ""
	}
	action, err := p.URL.Parse(html.UnescapeString(m[1]))
	if err != nil {
		return ""
	}
	return action.String()
}

// Authorize goes through the server's login and consent pages as the user
// login (any password), starting at p, and returns the first page after
// them (or the redirect StopAt stopped at).
func (b *Browser) Authorize(t testing.TB, p Page, login string) Page {
	t.Helper()
	for range 6 {
		action := FormAction(p)
		if action == "" || p.Status != http.StatusOK {
			return p
		}
		switch {
		case strings.Contains(p.Body, `name="prompt" value="login"`):
			p = b.Post(t, action, url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}})
		case strings.Contains(p.Body, `name="prompt" value="consent"`):
			p = b.Post(t, action, url.Values{"prompt": {"consent"}})
		default:
			return p
		}
	}
	t.Fatalf("still on the authorization server's pages: %s", p.Body)
	return p
}
