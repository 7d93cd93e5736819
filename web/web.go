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
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var pages = template.Must(template.New("").ParseFS(templateFS, "templates/*.html"))

// Render executes the named template into w with a strict security policy:
// no framing, no sniffing, scripts only from this origin. Rendering goes to
// a buffer first so a template error never leaves half a page.
func Render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
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
	Catalogs  []CatalogView
}

// Endpoint is one row of the endpoint table.
type Endpoint struct{ Path, What string }

// CatalogView is one MCP endpoint and its live tool list.
type CatalogView struct {
	Path  string
	Auth  string
	Tools []ToolView
}

// ToolView is one tool as the landing page shows it.
type ToolView struct {
	Name, Title, Description, Access string
}
