package wire

import (
	"maps"
	"slices"
	"testing"
)

// TestHeadersOf: a map becomes headers sorted by name, and back.
func TestHeadersOf(t *testing.T) {
	if h := HeadersOf(nil); h != nil {
		t.Fatalf("HeadersOf(nil) = %v, want nil", h)
	}
	m := map[string]string{"tier": "gpu", "arch": "arm64", "zone": "b"}
	h := HeadersOf(m)
	want := Headers{{"arch", "arm64"}, {"tier", "gpu"}, {"zone", "b"}}
	if !slices.Equal(h, want) {
		t.Fatalf("HeadersOf(%v) = %v, want %v", m, h, want)
	}
	if back := h.Map(); !maps.Equal(back, m) {
		t.Fatalf("Map of %v = %v, want %v", h, back, m)
	}
}
