package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStaticServesFilesOnly: the stylesheet is served; /static/ and any
// other directory path is 404, never a listing.
func TestStaticServesFilesOnly(t *testing.T) {
	h := Static()
	cases := []struct {
		path string
		want int
	}{
		{"/static/style.css", http.StatusOK},
		{"/static/", http.StatusNotFound},
		{"/static/.", http.StatusNotFound},
		{"/static/missing.css", http.StatusNotFound},
		{"/static/style.css/", http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, c.path, nil))
			if w.Code == http.StatusMovedPermanently {
				// FileServer redirects /static/. to /static/; that target is 404 too.
				return
			}
			if w.Code != c.want || strings.Contains(w.Body.String(), "<a href=") {
				t.Fatalf("%d %.200s", w.Code, w.Body.String())
			}
		})
	}
}
