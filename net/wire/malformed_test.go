package wire

import (
	"encoding/binary"
	"strings"
	"testing"
)

// body builds hand-made bodies for the malformed corpus.
type body []byte

func (b body) u8(v uint8) body   { return append(b, v) }
func (b body) u16(v uint16) body { return binary.BigEndian.AppendUint16(b, v) }
func (b body) u32(v uint32) body { return binary.BigEndian.AppendUint32(b, v) }
func (b body) u64(v uint64) body { return binary.BigEndian.AppendUint64(b, v) }
func (b body) str(s string) body { return append(b.u16(uint16(len(s))), s...) }
func (b body) blob(p []byte) body {
	return append(b.u32(uint32(len(p))), p...)
}
func (b body) key(c, p, u string) body { return b.str(c).str(p).str(u) }

func reqID(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// msg assembles frames for command name with request id 7 and a body.
func msg(cmd string, b body) [][]byte {
	return [][]byte{[]byte("DRV2"), []byte(cmd), reqID(7), b}
}

func bare(cmd string) [][]byte { return [][]byte{[]byte("DRV2"), []byte(cmd), reqID(7)} }

func hello(role, flags uint8, id string, slots uint32) body {
	return body{}.u8(role).u8(flags).str(id).str("host").u32(slots).u32(1000)
}

func TestDecodeMalformed(t *testing.T) {
	validSubmit := mustEncode(t, &Submit{Req: 7, Jobs: submitItems(3, 10)})
	truncated := append([][]byte{}, validSubmit...)
	truncated[3] = validSubmit[3][:len(validSubmit[3])-5]
	trailing := append([][]byte{}, validSubmit...)
	trailing[3] = append(append([]byte{}, validSubmit[3]...), 0)
	countLies := append([][]byte{}, validSubmit...)
	countLies[3] = append(body{}.u32(5), validSubmit[3][4:]...) // says 5, holds 3

	oneKey := body{}.u32(1).key("c", "p", "https://x/")
	goodHeaders := func(n int) body {
		b := body{}.u16(uint16(n))
		for i := range n {
			b = b.str("h" + itoa(uint64(i))).str("v")
		}
		return b
	}
	job := func(id uint64, attempt uint32, h body) body {
		return body{}.u32(1).u64(id).u32(attempt).key("c", "p", "https://x/").append(h).blob(nil)
	}
	result := func(outcome uint8, retry uint32, links uint32, linkBody body) body {
		return body{}.u32(1).u64(1).u32(1).u8(outcome).u32(retry).str("").blob(nil).u32(links).append(linkBody)
	}
	oneLink := body{}.key("c", "p", "https://x/l").u16(0).blob(nil)
	tooManyLinks := body{}.u32(MaxLinks/MaxLinksPerResult + 1)
	for i := range MaxLinks/MaxLinksPerResult + 1 {
		tooManyLinks = tooManyLinks.u64(uint64(i + 1)).u32(1).u8(1).u32(0).str("").blob(nil).u32(MaxLinksPerResult)
		for range MaxLinksPerResult {
			tooManyLinks = tooManyLinks.append(oneLink)
		}
	}

	tests := []struct {
		name   string
		frames [][]byte
		code   Code
		req    uint64
		want   string
	}{
		// Framing.
		{"no frames", nil, CodeMalformed, 0, "empty"},
		{"wrong protocol", [][]byte{[]byte("MDPW01"), []byte("HELLO"), reqID(7)}, CodeMalformed, 7, "protocol frame"},
		{"lower-case protocol", [][]byte{[]byte("drv1"), []byte("HEARTBEAT"), reqID(7)}, CodeMalformed, 7, "protocol frame"},
		{"newer version", [][]byte{[]byte("DRV3"), []byte("HELLO"), reqID(7), {1}}, CodeVersion, 7, "DRV3"},
		{"older version", [][]byte{[]byte("DRV1"), []byte("HELLO"), reqID(7), {1}}, CodeVersion, 7, `"DRV1" is not supported: this peer speaks only "DRV2"`},
		{"version 0", [][]byte{[]byte("DRV0")}, CodeVersion, 0, "DRV0"},
		{"unknown command", bare("FROB"), CodeUnknownCommand, 7, "FROB"},
		{"lower-case command", bare("heartbeat"), CodeUnknownCommand, 7, "heartbeat"},
		{"long garbage command", bare(strings.Repeat("Z", 5000)), CodeUnknownCommand, 7, "not a DRV/2 command"},
		{"only two frames", [][]byte{[]byte("DRV2"), []byte("HEARTBEAT")}, CodeMalformed, 0, "2 frames"},
		{"short request id", [][]byte{[]byte("DRV2"), []byte("HEARTBEAT"), {0, 7}}, CodeMalformed, 0, "want 8"},
		{"heartbeat with a body", msg("HEARTBEAT", body{1}), CodeMalformed, 7, "want 3"},
		{"submit without body", bare("SUBMIT"), CodeMalformed, 7, "want 4"},
		{"five frames", append(msg("SUBMIT", oneKey), []byte("x")), CodeMalformed, 7, "at most 4"},
		{"body over MaxBody", msg("SUBMIT", make(body, MaxBody+1)), CodeTooLarge, 7, "body"},
		{"empty body", msg("REQUEST", body{}), CodeMalformed, 7, "truncated"},

		// Counts.
		{"truncated body", truncated, CodeMalformed, 7, "truncated"},
		{"trailing bytes", trailing, CodeMalformed, 7, "trailing"},
		{"batch count lies", countLies, CodeMalformed, 7, "SUBMIT item 3"},
		{"batch count huge", msg("REQUEST", body{}.u32(0xFFFFFFFF)), CodeTooLarge, 7, "at most 10000"},
		{"batch count beyond bytes", msg("REQUEST", body{}.u32(9000).key("c", "p", "u")), CodeMalformed, 7, "need at least"},
		{"batch count zero", msg("QUEUE", body{}.u32(0)), CodeMalformed, 7, "at least 1"},
		{"links over the message limit", msg("RESULT", tooManyLinks), CodeTooLarge, 7, "item 10 link count"},
		{"link count over per-result limit", msg("RESULT", result(1, 0, MaxLinksPerResult+1, nil)), CodeTooLarge, 7, "link count"},

		// Strings.
		{"url too long", msg("REQUEST", body{}.u32(1).key("c", "p", "https://x/"+strings.Repeat("a", MaxURL))), CodeTooLarge, 7, "url"},
		{"url empty", msg("REQUEST", body{}.u32(1).key("c", "p", "")), CodeMalformed, 7, "url"},
		{"url bad utf-8", msg("REQUEST", body{}.u32(1).key("c", "p", "https://x/\xc3\x28")), CodeMalformed, 7, "invalid UTF-8"},
		{"url with newline", msg("REQUEST", body{}.u32(1).key("c", "p", "https://x/\n")), CodeMalformed, 7, "control character"},
		{"url with C1 control", msg("REQUEST", body{}.u32(1).key("c", "p", "https://x/\u0085")), CodeMalformed, 7, "U+0085"},
		{"crawler too long", msg("REQUEST", body{}.u32(1).key(strings.Repeat("c", MaxName+1), "p", "u")), CodeTooLarge, 7, "crawler"},
		{"string length beyond body", msg("REQUEST", body{}.u32(1).u16(0).u16(0).u16(50).u8('h')), CodeMalformed, 7, "truncated"},
		{"error text bad utf-8", msg("ERROR", body{}.u16(400).str("\xff")), CodeMalformed, 7, "UTF-8"},
		{"progress text too long", msg("PROGRESS", body{}.u64(1).u32(1).str(strings.Repeat("t", MaxText+1))), CodeTooLarge, 7, "text"},

		// Headers.
		{"header name with space", msg("JOB", job(1, 1, body{}.u16(1).str("a b").str("v"))), CodeMalformed, 7, "header name"},
		{"header name empty", msg("JOB", job(1, 1, body{}.u16(1).str("").str("v"))), CodeMalformed, 7, "header name"},
		{"duplicate header", msg("JOB", job(1, 1, body{}.u16(2).str("a").str("1").str("a").str("2"))), CodeMalformed, 7, "twice"},
		{"duplicate in a long header list", msg("JOB", job(1, 1, goodHeaders(20).append(body{}.str("h7").str("x"))[2:].prepend(body{}.u16(21)))), CodeMalformed, 7, "\"h7\" appears twice"},
		{"too many headers", msg("JOB", job(1, 1, goodHeaders(MaxHeaders+1))), CodeTooLarge, 7, "header count"},
		{"header value too long", msg("JOB", job(1, 1, body{}.u16(1).str("a").str(strings.Repeat("v", MaxHeaderValue+1)))), CodeTooLarge, 7, "header value"},

		// Enums and field rules.
		{"unknown role", msg("HELLO", hello(9, 0, "w", 1).u16(0).u32(0)), CodeMalformed, 7, "role"},
		{"unknown flag", msg("HELLO", hello(3, 2, "c", 0).u16(0).u32(0)), CodeMalformed, 7, "flags"},
		{"worker without slots", msg("HELLO", hello(1, 0, "w", 0).u16(0).u32(0)), CodeMalformed, 7, "slots"},
		{"worker with too many slots", msg("HELLO", hello(1, 0, "w", MaxSlots+1).u16(0).u32(0)), CodeMalformed, 7, "slots"},
		{"producer with slots", msg("HELLO", hello(2, 0, "p", 3).u16(0).u32(0)), CodeMalformed, 7, "slots"},
		{"producer holding jobs", msg("HELLO", hello(2, 0, "p", 0).u16(0).u32(1).u64(5).u32(1)), CodeMalformed, 7, "held"},
		{"producer with headers", msg("HELLO", hello(2, 0, "p", 0).u16(1).str("a").str("b").u32(0)), CodeMalformed, 7, "header count"},
		{"read-only worker", msg("HELLO", hello(1, 1, "w", 1).u16(0).u32(0)), CodeMalformed, 7, "read-only"},
		{"empty id", msg("HELLO", hello(1, 0, "", 1).u16(0).u32(0)), CodeMalformed, 7, "id"},
		{"held job id 0", msg("HELLO", hello(1, 0, "w", 1).u16(0).u32(1).u64(0).u32(1)), CodeMalformed, 7, "held"},
		{"held attempt 0", msg("HELLO", hello(1, 0, "w", 1).u16(0).u32(1).u64(5).u32(0)), CodeMalformed, 7, "held attempt"},
		{"result attempt 0", msg("RESULT", body{}.u32(1).u64(1).u32(0).u8(1).u32(0).str("").blob(nil).u32(0)), CodeMalformed, 7, "attempt"},
		{"cancel attempt 0", msg("CANCEL", body{}.u32(1).u64(1).u32(0).str("")), CodeMalformed, 7, "attempt"},
		{"welcome heartbeat 0", msg("WELCOME", body{}.u64(1).u32(0).u16(3).u32(0).u32(1).u32(1).u32(1).str("").u32(0)), CodeMalformed, 7, "heartbeat"},
		{"welcome limit above protocol", msg("WELCOME", body{}.u64(1).u32(1000).u16(3).u32(0).u32(MaxBody+1).u32(1).u32(1).str("").u32(0)), CodeMalformed, 7, "max body"},
		{"done outcome 3", msg("DONE", oneKey.u8(3)), CodeMalformed, 7, "outcome"},
		{"verdict 0", msg("VERDICTS", body{}.u32(1).append(make(body, 16)).u8(0).str("")), CodeMalformed, 7, "verdict"},
		{"wait in answer", msg("ANSWER", body{}.u32(1).append(make(body, 16)).u8(3).str("")), CodeMalformed, 7, "wait"},
		{"accepted without job id", msg("SUBMITTED", body{}.u32(1).u8(1).u64(0).append(make(body, 16)).str("")), CodeMalformed, 7, "job id"},
		{"wait with job id", msg("SUBMITTED", body{}.u32(1).u8(4).u64(4).append(make(body, 16)).str("")), CodeMalformed, 7, "want 0 for wait"},
		{"submit status 5", msg("SUBMITTED", body{}.u32(1).u8(5).u64(0).append(make(body, 16)).str("")), CodeMalformed, 7, "status"},
		{"error with job id", msg("SUBMITTED", body{}.u32(1).u8(3).u64(4).append(make(body, 16)).str("")), CodeMalformed, 7, "job id"},
		{"job id 0", msg("JOB", job(0, 1, body{}.u16(0))), CodeMalformed, 7, "job id"},
		{"attempt 0", msg("JOB", job(1, 0, body{}.u16(0))), CodeMalformed, 7, "attempt"},
		{"payload over limit", msg("SUBMIT", body{}.u32(1).key("c", "p", "u").u16(0).u32(MaxPayload+1)), CodeTooLarge, 7, "payload"},
		{"outcome 5", msg("RESULT", result(5, 0, 0, nil)), CodeMalformed, 7, "outcome"},
		{"retry-after on ok", msg("RESULT", result(1, 500, 0, nil)), CodeMalformed, 7, "retry after"},
		{"links on internal failure", msg("RESULT", result(2, 0, 1, oneLink)), CodeMalformed, 7, "links only with ok"},
		{"bad link url", msg("RESULT", result(1, 0, 2, oneLink.key("c", "p", "\x00").u16(0).blob(nil))), CodeMalformed, 7, "item 0 link 1 url"},
		{"stale result with counts", msg("RESULT-OK", body{}.u32(1).u64(1).u32(1).u8(2).u32(1).u32(0)), CodeMalformed, 7, "accepted"},
		{"cancel nothing", msg("CANCEL", body{}.u32(0).str("")), CodeMalformed, 7, "at least 1"},
		{"disconnect code 99", msg("DISCONNECT", body{}.u16(99).str("")), CodeMalformed, 7, "code"},
		{"error code 200", msg("ERROR", body{}.u16(200).str("")), CodeMalformed, 7, "code"},

		// JSON bodies.
		{"query not JSON", msg("QUERY", body("view=jobs")), CodeMalformed, 7, "bad JSON"},
		{"query bad utf-8", msg("QUERY", body("{\"view\":\"jobs\",\"filter\":\"\xff\"}")), CodeMalformed, 7, "UTF-8"},
		{"query wrong type", msg("QUERY", body(`{"view":"jobs","offset":"ten"}`)), CodeMalformed, 7, "bad JSON"},
		{"query unknown view", msg("QUERY", body(`{"view":"secrets"}`)), CodeMalformed, 7, "view"},
		{"query unknown filter field", msg("QUERY", body(`{"view":"jobs","filter":"colour=red"}`)), CodeMalformed, 7, `unknown field "colour"`},
		{"query filter term without value", msg("QUERY", body(`{"view":"jobs","filter":"state="}`)), CodeMalformed, 7, "no value"},
		{"query negative offset", msg("QUERY", body(`{"view":"jobs","offset":-1}`)), CodeMalformed, 7, "offset"},
		{"query limit too big", msg("QUERY", body(`{"view":"jobs","limit":10001}`)), CodeMalformed, 7, "limit"},
		{"query bad key", msg("QUERY", body(`{"view":"waiters","key":"zz"}`)), CodeMalformed, 7, "key"},
		{"query trailing data", msg("QUERY", body(`{"view":"jobs"} {}`)), CodeMalformed, 7, "bad JSON"},
		{"action unknown kind", msg("ACTION", body(`{"kind":"delete-everything"}`)), CodeMalformed, 7, "kind"},
		{"evict without target", msg("ACTION", body(`{"kind":"evict"}`)), CodeMalformed, 7, "targets"},
		{"page not JSON", msg("PAGE", body{0xff}), CodeMalformed, 7, "UTF-8"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if seen[tt.name] {
			t.Fatalf("duplicate case %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.frames)
			if err == nil {
				t.Fatalf("decoded %#v, want error %d", m, tt.code)
			}
			if m != nil {
				t.Fatalf("returned a message with the error")
			}
			we, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			if we.Code != tt.code {
				t.Fatalf("code %d (%v), want %d", we.Code, err, tt.code)
			}
			if we.Req != tt.req {
				t.Fatalf("request id %d, want %d", we.Req, tt.req)
			}
			if !strings.Contains(we.Msg, tt.want) {
				t.Fatalf("message %q does not mention %q", we.Msg, tt.want)
			}
		})
	}
}

func (b body) append(o body) body  { return append(b, o...) }
func (b body) prepend(o body) body { return append(append(body{}, o...), b...) }

// A well-formed message of every kind decodes; each frame truncated by one
// byte, or extended, does not, and never panics.
func TestEveryPrefixIsRejected(t *testing.T) {
	for _, m := range samples() {
		frames := mustEncode(t, m)
		if !m.Command().HasBody() {
			continue
		}
		b := frames[3]
		for n := range len(b) {
			cut := [][]byte{frames[0], frames[1], frames[2], b[:n]}
			if got, err := Decode(cut); err == nil {
				// A JSON prefix can be valid JSON only when it is the whole
				// document; for binary bodies no prefix is a message.
				t.Fatalf("%s: prefix of %d/%d bytes decoded to %#v", m.Command(), n, len(b), got)
			}
		}
	}
}
