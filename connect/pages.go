package connect

import (
	"html/template"
	"net/http"
)

// pageData fills the one page template of the connect flow.
type pageData struct {
	API     string // the API's title
	Title   string
	Message string
	Form    bool   // show the code form
	Link    string // the sealed link, posted back with the code
	Action  string // where the form posts
	Done    bool
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
input{font-size:1.2rem;letter-spacing:.15em;padding:.3rem;width:10rem}button{font-size:1rem;padding:.4rem 1rem}</style>
</head><body>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
{{if .Form}}<form method="post" action="{{.Action}}">
<input type="hidden" name="s" value="{{.Link}}">
<label>Code <input name="code" required autocomplete="off" autofocus placeholder="XXXX-XXXX"></label>
<button type="submit">Continue to {{.API}}</button>
</form>
<p><small>Only continue if you asked your client to use {{.API}} just now. If someone sent you this link, close this page: finishing it would let them act as you.</small></p>{{end}}
</body></html>
`))

// page writes a page with the headers every connect page carries.
func (c *Connector) page(w http.ResponseWriter, status int, d pageData) {
	secureHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, d)
}

// secureHeaders: no caching (links and states are single-use secrets), no
// Referer to the authorization server (the page URL holds the link), no
// framing (clickjacking of the code form), no scripts at all.
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
}
