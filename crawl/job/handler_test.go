package job

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"drover/crawl"
)

// decodeMarshalled reads what json.Marshal writes for a Payload exactly as
// json.Unmarshal does, and leaves anything else to json.Unmarshal:
// random payloads with the strings URLs and odd inputs hold (escapes,
// HTML characters json.Marshal escapes, invalid UTF-8, control characters)
// decode to the same Payload and the same verdict either way.
func TestDecodePayloadAsUnmarshal(t *testing.T) {
	pieces := []string{"http://a.test/", "https://b.test:8443/x?q=1&r=2", "/p/", "é", "\u2028", "<>", `"`, `\`,
		"\x01", "\xff", "%20", " ", "host", "domain", "prefix", "", "日本"}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	num := func() int {
		return []int{0, 1, 9, 10, -1, 123456789, 1 << 40, -(1 << 40)}[rng.IntN(8)]
	}
	var fast int
	for range 5000 {
		p := Payload{Depth: num(), Seed: str(), Scope: str(), MaxDepth: num(), Parent: str()}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeMarshalled(b); ok {
			fast++
		}
		same(t, b)
	}
	if fast < 500 {
		t.Errorf("only %d of 5000 marshalled payloads were read without json.Unmarshal", fast)
	}
	// What a crawl's jobs carry is read without it.
	for _, p := range []Payload{{Depth: 0, Seed: "http://a.test/"}, {Depth: 3, Seed: "http://127.0.0.1:8080/p/0", Parent: "http://127.0.0.1:8080/p/12"},
		{Depth: 1, Seed: "https://a.test/docs/", Scope: "prefix", MaxDepth: 4, Parent: "https://a.test/docs/"}} {
		b, _ := json.Marshal(p)
		if got, ok := decodeMarshalled(b); !ok || got != p {
			t.Errorf("decodeMarshalled(%s) = %+v, %v; want %+v, true", b, got, ok, p)
		}
	}
	for _, s := range []string{
		`{"depth":2,"seed":"http://a.test/"}`,
		`{"depth":2,"seed":"http://a.test/","scope":"prefix","max_depth":3,"parent":"http://a.test/p"}`,
		`{"depth":2,"seed":"http://a.test/","parent":"http://a.test/p"}`,
		`{"seed":"http://a.test/","depth":2}`,      // another order
		`{ "depth": 2, "seed": "http://a.test/" }`, // spaces
		`{"Depth":2,"seed":"http://a.test/"}`,      // a key's case
		`{"depth":2,"seed":"http://a.test/","x":1}`,
		`{"depth":2,"seed":"http://a.test/","scope":"host","scope":"domain"}`,
		`{"depth":02,"seed":"http://a.test/"}`,
		`{"depth":-0,"seed":"http://a.test/"}`,
		`{"depth":-,"seed":"http://a.test/"}`,
		`{"depth":1.5,"seed":"http://a.test/"}`,
		`{"depth":1e3,"seed":"http://a.test/"}`,
		`{"depth":99999999999999999999,"seed":"http://a.test/"}`,
		`{"depth":999999999999999999,"seed":"http://a.test/"}`,
		`{"depth":2,"seed":"http://a.test/\u00e9"}`,
		`{"depth":2,"seed":"http://a.test/` + "\x7f" + `"}`,
		`{"depth":2,"seed":"http://a.test/"}x`,
		`{"depth":2,"seed":"http://a.test/"`,
		`{"depth":2,"seed":"http://a.test/`,
		`{"depth":2,"seed":null}`,
		`{"depth":2}`,
		`{"depth":-3,"seed":"http://a.test/"}`,
		`{"depth":2,"seed":"http://a.test/","scope":"planet"}`,
		`{"depth":2,"seed":"http://a.test/","max_depth":-1}`,
		`{"depth":2,"seed":""}`,
		`[]`, ``, `{}`,
	} {
		same(t, []byte(s))
	}
}

// same checks that decodePayload reads b as json.Unmarshal and the checks
// after it do.
func same(t *testing.T, b []byte) {
	t.Helper()
	got, err := decodePayload(b)
	var want Payload
	werr := json.Unmarshal(b, &want)
	if werr == nil && (want.Seed == "" || want.Depth < 0 || want.MaxDepth < 0) {
		werr = errBadPayload
	}
	if werr == nil && want.Scope != "" {
		_, werr = crawl.ParseScope(want.Scope)
	}
	if (err == nil) != (werr == nil) {
		t.Errorf("payload %q: decodePayload error %v, json.Unmarshal and the checks %v", b, err, werr)
		return
	}
	if err == nil && got != want {
		t.Errorf("payload %q: decodePayload %+v, json.Unmarshal %+v", b, got, want)
	}
}

var errBadPayload = errors.New("bad payload")

func BenchmarkDecodePayload(b *testing.B) {
	p, _ := json.Marshal(Payload{Depth: 3, Seed: "http://127.0.0.1:8080/p/0", Parent: "http://127.0.0.1:8080/p/123"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodePayload(p); err != nil {
			b.Fatal(err)
		}
	}
}
