package wire

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzDecode from the samples")

// fuzzFrames builds the frames of one fuzz input: n (mod 6) of p, c, r, b
// and an extra frame.
func fuzzFrames(p, c, r, b []byte, n uint8) [][]byte {
	all := [][]byte{p, c, r, b, []byte("extra")}
	return all[:int(n)%(len(all)+1)]
}

func seedArgs(frames [][]byte) (p, c, r, b []byte, n uint8) {
	get := func(i int) []byte {
		if i < len(frames) {
			return frames[i]
		}
		return nil
	}
	return get(0), get(1), get(2), get(3), uint8(len(frames))
}

// FuzzDecode checks that Decode never panics, that it refuses only with a
// decoder code, and that whatever it accepts re-encodes to a message that
// decodes to the same value (and, for binary bodies, to the same bytes: the
// encoding is canonical); and that the one-pass decoders agree with the
// reader.
func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		frames, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		p, c, r, b, n := seedArgs(frames)
		f.Add(p, c, r, b, n)
	}
	f.Fuzz(func(t *testing.T, p, c, r, b []byte, n uint8) {
		frames := fuzzFrames(p, c, r, b, n)
		agree(t, "input", frames) // the one-pass decoders (fast.go) as the reader
		m, err := Decode(frames)
		if err != nil {
			switch CodeOf(err) {
			case CodeMalformed, CodeTooLarge, CodeUnknownCommand, CodeVersion:
			default:
				t.Fatalf("error %v: code %d is not a decoder code", err, CodeOf(err))
			}
			return
		}
		out, err := Encode(m)
		if err != nil {
			t.Fatalf("decoded %s does not re-encode: %v", m.Command(), err)
		}
		back, err := Decode(out)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", m.Command(), err)
		}
		var opts []cmp.Option
		if isJSON(m.Command()) {
			// JSON cannot tell an empty list from an omitted one.
			opts = append(opts, equateEmpty)
		}
		if diff := cmp.Diff(m, back, opts...); diff != "" {
			t.Fatalf("%s changed on the second round (-first +second):\n%s", m.Command(), diff)
		}
		if m.Command().HasBody() && !isJSON(m.Command()) && !bytes.Equal(out[3], frames[3]) {
			t.Fatalf("%s: re-encoded body differs from the accepted one:\n%x\n%x", m.Command(), frames[3], out[3])
		}
	})
}

func isJSON(c Command) bool { return commands[c].json }

// TestWriteFuzzSeeds rewrites the checked-in seed corpus when run with
// -update-seeds: the samples plus a few malformed messages, in the file
// format of go test fuzz v1.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz/FuzzDecode")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, frames [][]byte) {
		p, c, r, b, n := seedArgs(frames)
		var buf bytes.Buffer
		buf.WriteString("go test fuzz v1\n")
		for _, v := range [][]byte{p, c, r, b} {
			fmt.Fprintf(&buf, "[]byte(%q)\n", v)
		}
		fmt.Fprintf(&buf, "byte(%q)\n", n)
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range samples() {
		write(fmt.Sprintf("sample-%02d-%s", i, m.Command()), mustEncode(t, m))
	}
	sub := mustEncode(t, &Submit{Req: 7, Jobs: submitItems(2, 3)})
	write("bad-version", [][]byte{[]byte("DRV2"), []byte("HELLO"), reqID(1)})
	write("bad-command", bare("FROB"))
	write("bad-count", msg("SUBMIT", append(body{}.u32(5), sub[3][4:]...)))
	write("bad-utf8", msg("REQUEST", body{}.u32(1).key("c", "p", "https://x/\xc3\x28")))
	write("bad-json", msg("QUERY", body(`{"view":"jobs","offset":"ten"}`)))
}
