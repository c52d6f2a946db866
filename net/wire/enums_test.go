package wire

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestHeadersOf: a map becomes headers (in any order), and back.
func TestHeadersOf(t *testing.T) {
	if h := HeadersOf(nil); h != nil {
		t.Fatalf("HeadersOf(nil) = %v, want nil", h)
	}
	m := map[string]string{"tier": "gpu", "arch": "arm64", "zone": "b"}
	h := HeadersOf(m)
	slices.SortFunc(h, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	want := Headers{{"arch", "arm64"}, {"tier", "gpu"}, {"zone", "b"}}
	if !slices.Equal(h, want) {
		t.Fatalf("HeadersOf(%v) = %v, want %v", m, h, want)
	}
	if back := h.Map(); !maps.Equal(back, m) {
		t.Fatalf("Map of %v = %v, want %v", h, back, m)
	}
}
