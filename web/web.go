// Package web renders the gateway's HTML pages from embedded templates:
// the landing page now, the OAuth login and consent pages later. Templates
// are html/template, so every value is escaped for its context.
package web

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the templates; "visible" (Visible) is for every value a
// caller or an identity provider chose: names, subjects, hosts, messages.
var pages = template.Must(template.New("").Funcs(template.FuncMap{"visible": Visible}).ParseFS(templateFS, "templates/*.html"))

// Render executes the named template into w with a strict security policy:
// no script, no framing, no sniffing, forms only to this origin. Rendering
// goes to a buffer first so a template error never leaves half a page.
func Render(w http.ResponseWriter, status int, name string, data any) {
	RenderForm(w, status, name, data)
}

// RenderForm is Render for a page whose form may end, by a redirect, at
// other places than this origin (the consent page, whose answer is a 303 to
// the OAuth client): formTargets are CSP sources ("https://host:port",
// "cursor:") added to form-action. A source with a character CSP gives a
// meaning to (space, ';', ',', quotes) is left out, so a target can never
// widen the policy beyond itself.
func RenderForm(w http.ResponseWriter, status int, name string, data any, formTargets ...string) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	formAction := "'self'"
	for _, t := range formTargets {
		if cspSource(t) {
			formAction += " " + t
		}
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// cspSource reports whether s can stand in a CSP source list as one
// scheme or host source: letters, digits and the punctuation of a scheme,
// host and port, no wildcard.
func cspSource(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(".-+:/[]", r):
		default:
			return false
		}
	}
	return true
}

// Static serves the embedded stylesheet and images under /static/, files
// only: a directory (/static/ itself) is 404, never a listing of what the
// binary embeds.
func Static() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.StripPrefix("/static/", http.FileServer(http.FS(filesOnly{sub})))
}

// filesOnly is an fs.FS in which directories do not exist, so
// http.FileServer has none to list.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, fs.ErrNotExist
	}
	return file, nil
}

// Landing is the data of the landing page.
type Landing struct {
	Version   string
	PublicURL string
	Endpoints []Endpoint
	Toolsets  []ToolsetView
}

// Endpoint is one row of the endpoint table.
type Endpoint struct{ Path, What string }

// ToolsetView is one MCP endpoint and its live tool list.
type ToolsetView struct {
	Path  string
	Auth  string
	Tools []ToolView
}

// ToolView is one tool as the landing page shows it.
type ToolView struct {
	Name, Title, Description, Access string
}
