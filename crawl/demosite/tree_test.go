package demosite

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTree: page i links to 10i+1 … 10i+10 below n, and nothing else is
// served.
func TestTree(t *testing.T) {
	h := Tree(25)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("/p/2")
	if code != 200 || strings.Count(body, "<a href=") != 4 || !strings.Contains(body, `href="/p/21"`) || !strings.Contains(body, `href="/p/24"`) || strings.Contains(body, `href="/p/25"`) {
		t.Fatalf("/p/2: %d %q: want links to /p/21 … /p/24 only", code, body)
	}
	if code, body := get("/p/3"); code != 200 || strings.Contains(body, "<a ") {
		t.Fatalf("/p/3: %d %q: want a leaf page", code, body)
	}
	for _, p := range []string{"/p/25", "/p/-1", "/robots.txt", "/x/1", "/p/x"} {
		if code, _ := get(p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
}
