package id

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
)

// encodeForTest builds the documented encoding independently of Key.Fingerprint.
func encodeForTest(fields ...string) []byte {
	var b []byte
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

func TestFingerprintKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string // computed outside Go: sha256(len-prefixed fields)[:16]
	}{
		{"example", Key{"news", "html", "http://example.com/"}, "e17ece737671c94b6595538964e10433"},
		{"empty", Key{}, "15ec7bf0b50732b49f8228e07d243653"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.Fingerprint()
			if got.String() != tt.want {
				t.Fatalf("Fingerprint(%+v) = %s, want %s", tt.key, got, tt.want)
			}
			sum := sha256.Sum256(encodeForTest(tt.key.Crawler, tt.key.Processor, tt.key.URL))
			if string(got[:]) != string(sum[:16]) {
				t.Fatalf("Fingerprint(%+v) = %x, want the first 16 bytes of sha256 of the encoding, %x", tt.key, got, sum[:16])
			}
		})
	}
}

func TestFingerprintLongKeyMatchesEncoding(t *testing.T) {
	// Longer than the 256-byte stack buffer: the heap path must hash the same encoding.
	k := Key{"c", "p", "http://example.com/" + strings.Repeat("a", 1000)}
	sum := sha256.Sum256(encodeForTest(k.Crawler, k.Processor, k.URL))
	if got := k.Fingerprint(); string(got[:]) != string(sum[:16]) {
		t.Fatalf("long key: Fingerprint = %x, want %x", got, sum[:16])
	}
}

func TestFingerprintDistinguishesCollidingConcatenations(t *testing.T) {
	// Each pair has equal concatenations of its fields, or equal String()
	// renderings, so only the length prefixes keep them apart.
	pairs := [][2]Key{
		{{"ab", "c", "http://x/"}, {"a", "bc", "http://x/"}},
		{{"a", "", "bhttp://x/"}, {"", "a", "bhttp://x/"}},
		{{"a/b", "c", "http://x/"}, {"a", "b/c", "http://x/"}},
		{{"a", "b c", "http://x/"}, {"a", "b", "c http://x/"}},
		{{"", "", "abc"}, {"abc", "", ""}},
	}
	for _, p := range pairs {
		a, b := p[0], p[1]
		if a.Crawler+a.Processor+a.URL != b.Crawler+b.Processor+b.URL && a.String() != b.String() {
			t.Fatalf("test pair %+v / %+v does not collide when concatenated", a, b)
		}
		if a.Fingerprint() == b.Fingerprint() {
			t.Errorf("keys %+v and %+v share fingerprint %s; want distinct", a, b, a.Fingerprint())
		}
	}
}

func TestFingerprintStringRoundTrip(t *testing.T) {
	f := Key{"news", "html", "http://example.com/"}.Fingerprint()
	got, err := ParseFingerprint(f.String())
	if err != nil || got != f {
		t.Fatalf("ParseFingerprint(%s) = %s, %v; want %s, nil", f, got, err, f)
	}
	upper, err := ParseFingerprint(strings.ToUpper(f.String()))
	if err != nil || upper != f {
		t.Fatalf("ParseFingerprint(upper-case) = %s, %v; want %s, nil", upper, err, f)
	}
}

func TestParseFingerprintRejects(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("0", 31), strings.Repeat("0", 33), strings.Repeat("g", 32)} {
		if _, err := ParseFingerprint(s); err == nil {
			t.Errorf("ParseFingerprint(%q) succeeded; want an error", s)
		}
	}
}

func TestKeyString(t *testing.T) {
	k := Key{"news", "html", "http://example.com/"}
	if got, want := k.String(), "news/html http://example.com/"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
