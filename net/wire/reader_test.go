package wire

import (
	"math/rand/v2"
	"testing"
)

// printableASCII8 agrees with a byte-by-byte test on every byte value in
// every position, and on random words.
func TestPrintableASCII8(t *testing.T) {
	slow := func(w uint64) bool {
		for i := range 8 {
			if c := byte(w >> (8 * i)); c < 0x20 || c >= 0x7f {
				return false
			}
		}
		return true
	}
	const base = 0x6161616161616161 // "aaaaaaaa"
	for pos := range 8 {
		for c := range 256 {
			w := base&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
			if got, want := printableASCII8(w), slow(w); got != want {
				t.Fatalf("printableASCII8(%#016x) = %v, want %v", w, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		w := r.Uint64()
		if r.IntN(2) == 0 { // mostly printable, so that both answers come up
			w = w&0x3f3f3f3f3f3f3f3f | 0x4040404040404040
			w ^= uint64(r.IntN(256)) << (8 * r.IntN(8))
		}
		if got, want := printableASCII8(w), slow(w); got != want {
			t.Fatalf("printableASCII8(%#016x) = %v, want %v", w, got, want)
		}
	}
}
