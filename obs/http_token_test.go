package obs

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// /metrics needs the token when one is set; the probes never do.
func TestRequireToken(t *testing.T) {
	h := RequireToken(Handler(NewMetrics(), nil), "/metrics", "s3cret")
	for _, tt := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Bearer wrong", http.StatusUnauthorized},
		{"/metrics", "s3cret", http.StatusUnauthorized},
		{"/metrics", "Bearer s3cret", http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		r := httptest.NewRequest("GET", tt.path, nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s with %q: %d, want %d", tt.path, tt.auth, w.Code, tt.want)
		}
	}
	if open := RequireToken(Handler(nil, nil), "/metrics", ""); open == nil {
		t.Fatal("nil handler")
	}
}
