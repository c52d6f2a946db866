package conformance

import (
	"encoding/binary"
	"slices"
	"strings"

	"drover/net/wire"
)

// errorVector is a message every decoder must refuse, with the code of
// the ERROR it answers (docs/PROTOCOL.md §7). Each has exactly one fault.
type errorVector struct {
	name   string
	frames [][]byte
	code   wire.Code
}

// fill says that a vector's frame Frame is followed by zero bytes up to
// Size bytes in all: how the kit writes a message too large to store in hex
// (a body over 16 MiB) without storing it.
type fill struct {
	Frame int `json:"frame"`
	Size  int `json:"size"`
}

// fills are the padded error vectors, by name: their frames in the kit
// stop where the zero bytes begin.
var fills = map[string]*fill{
	"body-over-limit": {Frame: 3, Size: wire.MaxBody + 1},
}

// message returns the vector's whole message, padding included.
func (v errorVector) message() [][]byte {
	return padded(v.frames, fills[v.name])
}

// padded returns frames with frame f.Frame padded with zero bytes to
// f.Size (frames itself when f is nil).
func padded(frames [][]byte, f *fill) [][]byte {
	if f == nil || f.Frame >= len(frames) || len(frames[f.Frame]) > f.Size {
		return frames
	}
	out := slices.Clone(frames)
	out[f.Frame] = append(slices.Clip(out[f.Frame]), make([]byte, f.Size-len(out[f.Frame]))...)
	return out
}

// b builds a body field by field, big-endian.
type b []byte

func (x b) u8(v uint8) b   { return append(x, v) }
func (x b) u16(v uint16) b { return binary.BigEndian.AppendUint16(x, v) }
func (x b) u32(v uint32) b { return binary.BigEndian.AppendUint32(x, v) }
func (x b) u64(v uint64) b { return binary.BigEndian.AppendUint64(x, v) }
func (x b) str(s string) b { return append(x.u16(uint16(len(s))), s...) }
func (x b) raw(p ...byte) b {
	return append(x, p...)
}
func (x b) key(c, p, u string) b { return x.str(c).str(p).str(u) }
func (x b) fp() b                { return append(x, make([]byte, 16)...) }

func msg(cmd string, req uint64, body b) [][]byte {
	f := [][]byte{[]byte("DRV2"), []byte(cmd), binary.BigEndian.AppendUint64(nil, req)}
	if body != nil {
		f = append(f, body)
	}
	return f
}

// hello is a valid HELLO body up to (not including) slots, for role r.
func helloHead(role uint8, flags uint8, id string) b {
	return b{}.u8(role).u8(flags).str(id).str("box")
}

func errorVectors() []errorVector {
	const (
		bad   = wire.CodeMalformed
		large = wire.CodeTooLarge
	)
	key := b{}.key("news", "html", "https://a.example/")
	okHello := func(role uint8, flags uint8, slots uint32) b {
		return helloHead(role, flags, "w1").u32(slots).u32(1000).u16(0).u32(0)
	}
	req1 := func(k b) b { return b{}.u32(1).raw(k...) }
	long := func(n int) string { return strings.Repeat("a", n) }
	return []errorVector{
		// Framing (§3, §12).
		{"no-frames", [][]byte{}, bad},
		{"protocol-other-version", [][]byte{[]byte("DRV3"), []byte("HEARTBEAT"), make([]byte, 8)}, wire.CodeVersion},
		{"protocol-drv1", [][]byte{[]byte("DRV1"), []byte("HEARTBEAT"), make([]byte, 8)}, wire.CodeVersion},
		{"protocol-garbage", [][]byte{[]byte("HTTP"), []byte("HEARTBEAT"), make([]byte, 8)}, bad},
		{"two-frames", [][]byte{[]byte("DRV2"), []byte("HEARTBEAT")}, bad},
		{"five-frames", [][]byte{[]byte("DRV2"), []byte("PROGRESS"), make([]byte, 8), b{}.u64(1).u32(1).str(""), {}}, bad},
		{"unknown-command", msg("FROBNICATE", 1, nil), wire.CodeUnknownCommand},
		{"lower-case-command", msg("heartbeat", 0, nil), wire.CodeUnknownCommand},
		{"command-name-11-bytes", msg("HEARTBEATSS", 1, nil), wire.CodeUnknownCommand},
		{"command-name-2-bytes", msg("OK", 1, nil), wire.CodeUnknownCommand},
		{"body-over-limit", msg("REQUEST", 1, b{}.u32(1)), large}, // padded: fills
		{"request-id-7-bytes", [][]byte{[]byte("DRV2"), []byte("HEARTBEAT"), make([]byte, 7)}, bad},
		{"body-missing", msg("REQUEST", 1, nil), bad},
		{"body-on-bodiless-command", msg("HEARTBEAT", 0, b{}), bad},
		{"trailing-bytes", msg("PROGRESS", 0, b{}.u64(1).u32(1).str("x").u8(0)), bad},
		{"truncated", msg("PROGRESS", 0, b{}.u64(1).u32(1).u16(5).raw('x')), bad},

		// Counts (§8).
		{"count-zero", msg("REQUEST", 1, b{}.u32(0)), bad},
		{"count-over-limit", msg("REQUEST", 1, b{}.u32(10001).raw(key...)), large},
		{"count-lying", msg("REQUEST", 1, b{}.u32(1000).raw(key...)), bad},
		{"held-over-limit", msg("HELLO", 1, helloHead(1, 0, "w1").u32(4).u32(1000).u16(0).u32(4097)), large},
		{"cancel-count-zero", msg("CANCEL", 0, b{}.u32(0).str("")), bad},
		{"links-over-limit", msg("RESULT", 1, b{}.u32(1).u64(1).u32(1).u8(1).u32(0).str("").u32(0).u32(10001)), large},

		// Strings (§4).
		{"url-empty", msg("REQUEST", 1, req1(b{}.key("news", "html", ""))), bad},
		{"url-too-long", msg("REQUEST", 1, b{}.u32(1).str("news").str("html").u16(8193)), large},
		{"crawler-too-long", msg("REQUEST", 1, req1(b{}.key(long(256), "html", "https://a/"))), large},
		{"crawler-control-character", msg("REQUEST", 1, req1(b{}.key("ne\nws", "html", "https://a/"))), bad},
		{"crawler-c1-control", msg("REQUEST", 1, req1(b{}.key("ne\u0085ws", "html", "https://a/"))), bad},
		{"crawler-delete", msg("REQUEST", 1, req1(b{}.key("ne\x7fws", "html", "https://a/"))), bad},
		{"crawler-invalid-utf8", msg("REQUEST", 1, req1(b{}.key("ne\xffws", "html", "https://a/"))), bad},
		{"text-invalid-utf8", msg("ERROR", 1, b{}.u16(400).str("bad \xc3")), bad},
		{"text-too-long", msg("ERROR", 1, b{}.u16(400).u16(4097)), large},
		{"reason-too-long", msg("VERDICTS", 1, b{}.u32(1).fp().u8(1).u16(256)), large},
		{"id-empty", msg("HELLO", 1, helloHead(2, 0, "").u32(0).u32(0).u16(0).u32(0)), bad},
		{"id-too-long", msg("HELLO", 1, b{}.u8(2).u8(0).u16(129)), large},

		// Headers (§4).
		{"header-name-empty", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(1).str("").str("v").u32(0)), bad},
		{"header-name-space", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(1).str("la ng").str("v").u32(0)), bad},
		{"header-name-duplicate", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(2).str("lang").str("en").str("lang").str("de").u32(0)), bad},
		{"header-name-too-long", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(1).u16(129).raw(0, 0, 0)), large},
		{"header-value-too-long", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(1).str("lang").u16(1025)), large},
		{"header-count-over-limit", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(65).raw(make([]byte, 65*5)...).u32(0)), large},
		{"payload-too-large", msg("SUBMIT", 1, b{}.u32(1).raw(key...).u16(0).u32(1<<20+1)), large},
		{"output-too-large", msg("RESULT", 1, b{}.u32(1).u64(1).u32(1).u8(1).u32(0).str("").u32(4<<20+1).u32(0)), large},
		{"robots-content-too-large", msg("ROBOTS", 1, b{}.str("https://a.example").u32(1000).u32(0).u32(512<<10+1)), large},
		{"robots-ttl-zero", msg("ROBOTS", 1, b{}.str("https://a.example").u32(0).u32(0).u32(0)), bad},
		{"robots-origin-empty", msg("ROBOTS", 1, b{}.str("").u32(1000).u32(0).u32(0)), bad},

		// Enumerations and field rules (§6).
		{"hello-role-zero", msg("HELLO", 1, okHello(0, 0, 0)), bad},
		{"hello-role-4", msg("HELLO", 1, okHello(4, 0, 0)), bad},
		{"hello-flags-bit-1", msg("HELLO", 1, okHello(3, 2, 0)), bad},
		{"hello-read-only-producer", msg("HELLO", 1, okHello(2, 1, 0)), bad},
		{"hello-worker-no-slots", msg("HELLO", 1, okHello(1, 0, 0)), bad},
		{"hello-worker-4097-slots", msg("HELLO", 1, okHello(1, 0, 4097)), bad},
		{"hello-producer-slots", msg("HELLO", 1, okHello(2, 0, 1)), bad},
		{"hello-producer-headers", msg("HELLO", 1, helloHead(2, 0, "p").u32(0).u32(0).u16(1).str("a").str("b").u32(0)), bad},
		{"hello-producer-held", msg("HELLO", 1, helloHead(2, 0, "p").u32(0).u32(0).u16(0).u32(1).u64(5).u32(1)), bad},
		{"welcome-session-zero", msg("WELCOME", 1, b{}.u64(0).u32(1000).u16(3).u32(0).u32(1).u32(1).u32(1).str("").u32(0)), bad},
		{"welcome-heartbeat-zero", msg("WELCOME", 1, b{}.u64(1).u32(0).u16(3).u32(0).u32(1).u32(1).u32(1).str("").u32(0)), bad},
		{"welcome-liveness-zero", msg("WELCOME", 1, b{}.u64(1).u32(1000).u16(0).u32(0).u32(1).u32(1).u32(1).str("").u32(0)), bad},
		{"welcome-slots-4097", msg("WELCOME", 1, b{}.u64(1).u32(1000).u16(3).u32(4097).u32(1).u32(1).u32(1).str("").u32(0)), bad},
		{"welcome-max-body-zero", msg("WELCOME", 1, b{}.u64(1).u32(1000).u16(3).u32(0).u32(0).u32(1).u32(1).str("").u32(0)), bad},
		{"welcome-max-batch-10001", msg("WELCOME", 1, b{}.u64(1).u32(1000).u16(3).u32(0).u32(1).u32(10001).u32(1).str("").u32(0)), bad},
		{"welcome-max-payload-over", msg("WELCOME", 1, b{}.u64(1).u32(1000).u16(3).u32(0).u32(1).u32(1).u32(1<<20+1).str("").u32(0)), bad},
		{"disconnect-code-199", msg("DISCONNECT", 0, b{}.u16(199).str("")), bad},
		{"error-code-200", msg("ERROR", 1, b{}.u16(200).str("")), bad},
		{"done-outcome-3", msg("DONE", 1, b{}.u32(1).raw(key...).u8(3)), bad},
		{"verdict-5", msg("VERDICTS", 1, b{}.u32(1).fp().u8(5).str("")), bad},
		{"answer-wait", msg("ANSWER", 1, b{}.u32(1).fp().u8(3).str("requested")), bad},
		{"submitted-status-5", msg("SUBMITTED", 1, b{}.u32(1).u8(5).u64(0).fp().str("")), bad},
		{"submitted-accepted-job-zero", msg("SUBMITTED", 1, b{}.u32(1).u8(1).u64(0).fp().str("")), bad},
		{"submitted-error-with-job", msg("SUBMITTED", 1, b{}.u32(1).u8(3).u64(7).fp().str("bad-key")), bad},
		{"submitted-wait-with-job", msg("SUBMITTED", 1, b{}.u32(1).u8(4).u64(7).fp().str("requested")), bad},
		{"job-id-zero", msg("JOB", 0, b{}.u32(1).u64(0).u32(1).raw(key...).u16(0).u32(0)), bad},
		{"job-attempt-zero", msg("JOB", 0, b{}.u32(1).u64(1).u32(0).raw(key...).u16(0).u32(0)), bad},
		{"cancel-job-id-zero", msg("CANCEL", 0, b{}.u32(1).u64(0).u32(1).str("")), bad},
		{"cancel-attempt-zero", msg("CANCEL", 0, b{}.u32(1).u64(1).u32(0).str("")), bad},
		{"hello-held-attempt-zero", msg("HELLO", 1, helloHead(1, 0, "w1").u32(4).u32(1000).u16(0).u32(1).u64(5).u32(0)), bad},
		{"result-attempt-zero", msg("RESULT", 1, b{}.u32(1).u64(1).u32(0).u8(1).u32(0).str("").u32(0).u32(0)), bad},
		{"result-outcome-5", msg("RESULT", 1, b{}.u32(1).u64(1).u32(1).u8(5).u32(0).str("").u32(0).u32(0)), bad},
		{"result-retry-after-not-throttled", msg("RESULT", 1, b{}.u32(1).u64(1).u32(1).u8(2).u32(1000).str("").u32(0).u32(0)), bad},
		{"result-links-not-ok", msg("RESULT", 1, b{}.u32(1).u64(1).u32(1).u8(3).u32(0).str("").u32(0).u32(1).raw(key...).u16(0).u32(0)), bad},
		{"result-job-id-zero", msg("RESULT", 1, b{}.u32(1).u64(0).u32(1).u8(1).u32(0).str("").u32(0).u32(0)), bad},
		{"result-ok-status-4", msg("RESULT-OK", 1, b{}.u32(1).u64(1).u32(1).u8(4).u32(0).u32(0)), bad},
		{"result-ok-stale-with-counts", msg("RESULT-OK", 1, b{}.u32(1).u64(1).u32(1).u8(2).u32(1).u32(0)), bad},
		{"progress-job-id-zero", msg("PROGRESS", 0, b{}.u64(0).u32(1).str("x")), bad},
		{"progress-attempt-zero", msg("PROGRESS", 0, b{}.u64(1).u32(0).str("x")), bad},

		// Admin JSON bodies (§13).
		{"query-not-json", msg("QUERY", 1, b("{view")), bad},
		{"query-invalid-utf8", msg("QUERY", 1, b("{\"view\":\"jobs\xff\"}")), bad},
		{"query-unknown-view", msg("QUERY", 1, b(`{"view":"cats"}`)), bad},
		{"query-limit-over", msg("QUERY", 1, b(`{"view":"jobs","limit":10001}`)), bad},
		{"query-offset-negative", msg("QUERY", 1, b(`{"view":"jobs","offset":-1}`)), bad},
		{"query-filter-too-long", msg("QUERY", 1, b(`{"view":"jobs","filter":"`+long(1025)+`"}`)), large},
		{"query-key-not-hex", msg("QUERY", 1, b(`{"view":"waiters","key":"zz"}`)), bad},
		{"query-waiters-key-job-id", msg("QUERY", 1, b(`{"view":"waiters","key":"17"}`)), bad},
		{"query-jobs-key-job-id-zero", msg("QUERY", 1, b(`{"view":"jobs","key":"0"}`)), bad},
		{"query-filter-unknown-field", msg("QUERY", 1, b(`{"view":"jobs","filter":"colour=red"}`)), bad},
		{"query-filter-no-field", msg("QUERY", 1, b(`{"view":"jobs","filter":"=failed"}`)), bad},
		{"query-filter-no-value", msg("QUERY", 1, b(`{"view":"jobs","filter":"state=,"}`)), bad},
		{"action-cancel-without-crawler", msg("ACTION", 1, b(`{"kind":"cancel"}`)), bad},
		{"action-crawler-with-evict", msg("ACTION", 1, b(`{"kind":"evict","targets":["w1"],"crawler":"news"}`)), bad},
		{"action-unknown-kind", msg("ACTION", 1, b(`{"kind":"explode"}`)), bad},
		{"action-evict-no-targets", msg("ACTION", 1, b(`{"kind":"evict"}`)), bad},
		{"action-pause-with-targets", msg("ACTION", 1, b(`{"kind":"pause","targets":["w1"]}`)), bad},
		{"action-define-crawl-without-crawl", msg("ACTION", 1, b(`{"kind":"define-crawl"}`)), bad},
		{"action-define-crawl-empty-name", msg("ACTION", 1, b(`{"kind":"define-crawl","crawl":{"name":""}}`)), bad},
		{"action-target-empty", msg("ACTION", 1, b(`{"kind":"drain","targets":[""]}`)), bad},
		{"action-target-too-long", msg("ACTION", 1, b(`{"kind":"drain","targets":["`+long(256)+`"]}`)), bad},
	}
}
