package wire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drover/coord/id"
)

// agree decodes frames with and without the one-pass decoders (fast.go)
// and fails unless both give the same message or the same error.
func agree(t *testing.T, what string, frames [][]byte) {
	t.Helper()
	fast, ferr := decode(frames, true, nil)
	slow, serr := decode(frames, false, nil)
	if ferr != nil || serr != nil {
		if ferr == nil || serr == nil || *ferr != *serr {
			t.Fatalf("%s: fast path error %v, reader error %v; want the same", what, ferr, serr)
		}
		return
	}
	if diff := cmp.Diff(slow, fast); diff != "" {
		t.Fatalf("%s: fast path decoded differently (-reader +fast):\n%s", what, diff)
	}
}

// fastCorpus is key and verdict batches with what the fast paths must get
// right: names shared or not, empty names, non-ASCII text (allowed and
// not), control characters, limits exactly and one past.
func fastCorpus() []Message {
	keys := func(ks ...id.Key) []id.Key { return ks }
	k := func(c, p, u string) id.Key { return id.Key{Crawler: c, Processor: p, URL: u} }
	long := func(n int) string { return "https://x/" + strings.Repeat("a", n-len("https://x/")) }
	var ms []Message
	for _, ks := range [][]id.Key{
		keys(k("c", "p", "https://x/1"), k("c", "p", "https://x/2"), k("d", "p", "https://x/3"), k("c", "q", "https://x/4")),
		keys(k("", "", "u"), k("", "p", "u2"), k("c", "", "u3")),
		keys(k("crawlé", "prøcess", "https://例え.jp/パス?q=ü"), k("crawlé", "prøcess", "https://x/\u00a0")),
		keys(k(strings.Repeat("n", MaxName), strings.Repeat("p", MaxName), long(MaxURL))),
		keys(k(strings.Repeat("n", MaxName+1), "p", "https://x/")),
		keys(k("c", "p", long(MaxURL+1))),
		keys(k("c", "p", "")),
		keys(k("c", "p", "https://x/\x01")),
		keys(k("c", "p", "https://x/\x7f")),
		keys(k("c", "p", "https://x/\u0085")), // a C1 control character
		keys(k("c", "p", "https://x/\xc3\x28")),
		keys(k("c\n", "p", "https://x/")),
		keys(k("c", "p", "https://x/1"), k("c", "p\t", "https://x/2")),
		keys(),
		make([]id.Key, MaxBatch+1),
	} {
		ms = append(ms, &Request{Req: 3, Keys: ks}, &Queue{Req: 4, Keys: ks})
	}
	v := func(verdict Verdict, reason string) VerdictItem {
		return VerdictItem{Fingerprint: fp(len(reason)), Verdict: verdict, Reason: reason}
	}
	for _, items := range [][]VerdictItem{
		{v(VerdictOK, ""), v(VerdictNo, "queued"), v(VerdictOK, "owner"), v(VerdictNo, "done"), v(VerdictNo, "failed")},
		{v(VerdictWait, "requested"), v(VerdictOK, "handover"), v(VerdictError, "not-owner"), v(VerdictError, "unknown"), v(VerdictError, "wrong-state")},
		{v(VerdictError, "bad-key: url: not a URL"), v(VerdictNo, "quéued"), v(VerdictError, "bad-key: x")},
		{v(VerdictError, strings.Repeat("r", MaxReason))},
		{v(VerdictError, strings.Repeat("r", MaxReason+1))},
		{v(VerdictError, "bad\x00reason")},
		{v(Verdict(0), "")},
		{v(Verdict(9), "")},
		{},
	} {
		ms = append(ms, &Verdicts{Req: 5, Items: items}, &Answer{Req: 6, Items: items})
	}
	return ms
}

// TestFastPathsAgree holds the one-pass decoders and the checking writers
// to the reader: the same message or the same error for each body of the
// corpus, for every truncation of it, and for random changes of its bytes;
// and a body its writer checked passes the validating pass.
func TestFastPathsAgree(t *testing.T) {
	rnd := rand.New(rand.NewPCG(21, 1))
	for i, m := range fastCorpus() {
		var e Encoder
		e.w = writer{cmd: m.Command()}
		m.appendBody(&e.w)
		body := e.w.b
		name := m.Command().String() + " " + itoa(uint64(i))
		if e.w.checked && e.w.err == nil {
			if err := e.validate(m.Command(), 0, body, false); err != nil {
				t.Fatalf("%s: the writer checked a body the reader refuses: %v", name, err)
			}
		}
		// Encode refuses what the reader refuses, with its words.
		if _, err := e.Encode(m); err != nil && e.w.err == nil {
			if verr := e.validate(m.Command(), m.RequestID(), body, false); verr == nil || !strings.Contains(err.Error(), verr.Msg) {
				t.Fatalf("%s: Encode says %v, the reader %v", name, err, verr)
			}
		}
		frames := [][]byte{[]byte(Protocol), []byte(m.Command().String()), reqID(m.RequestID()), body}
		agree(t, name, frames)
		for cut := range len(body) {
			agree(t, name+" cut", [][]byte{frames[0], frames[1], frames[2], body[:cut]})
		}
		for range 200 {
			b := append([]byte(nil), body...)
			if len(b) == 0 {
				break
			}
			for range 1 + rnd.IntN(3) {
				b[rnd.IntN(len(b))] = byte(rnd.Uint32())
			}
			agree(t, name+" changed", [][]byte{frames[0], frames[1], frames[2], b})
		}
	}
}

// TestFastDecodeAllocations: a batch of a thousand keys or verdicts is
// at most three allocations (message, records, strings: none for a key batch, whose strings alias the body), whatever its size.
func TestFastDecodeAllocations(t *testing.T) {
	for _, m := range []Message{benchRequest(1000), benchVerdicts(1000), &Queue{Req: 1, Keys: benchRequest(2).Keys}} {
		frames := mustEncode(t, m)
		if n := testing.AllocsPerRun(20, func() { _, _ = Decode(frames) }); n > 3 {
			t.Errorf("%s: %v allocations, want at most 3", m.Command(), n)
		}
	}
}

// TestDecoderRoom: a Decoder decodes what Decode does, the keys of each
// key batch in the room of the one before (no allocation for them), and
// OwnKeys gives a batch keys of its own.
func TestDecoderRoom(t *testing.T) {
	var d Decoder
	for i, m := range fastCorpus() {
		frames := [][]byte{[]byte(Protocol), []byte(m.Command().String()), reqID(m.RequestID()), nil}
		var e Encoder
		e.w = writer{cmd: m.Command()}
		m.appendBody(&e.w)
		frames[3] = e.w.b
		want, werr := Decode(frames)
		got, gerr := d.Decode(frames)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("message %d: Decoder error %v, Decode error %v", i, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("message %d: Decoder decoded differently (-Decode +Decoder):\n%s", i, diff)
		}
	}
	frames := mustEncode(t, benchRequest(1000))
	first, err := d.Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	kept := first.(*Request)
	OwnKeys(kept)
	if n := testing.AllocsPerRun(20, func() { _, _ = d.Decode(frames) }); n > 1 {
		t.Errorf("Decoder.Decode of a 1000-key REQUEST: %v allocations, want at most 1 (the message)", n)
	}
	other := mustEncode(t, &Request{Req: 2, Keys: []id.Key{{Crawler: "c", Processor: "p", URL: "https://other/"}}})
	if _, err := d.Decode(other); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(benchRequest(1000).Keys, kept.Keys); diff != "" {
		t.Fatalf("keys taken with OwnKeys changed by a later Decode (-want +got):\n%s", diff)
	}
}
