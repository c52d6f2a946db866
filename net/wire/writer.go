package wire

import (
	"encoding/binary"
	"math"
	"time"

	"drover/coord/id"
)

// writer appends a body. It only checks that values are representable
// (lengths fit their prefixes, durations fit u32 milliseconds); every other
// rule is checked by running the decoder's validating pass on the result.
type writer struct {
	b   []byte
	cmd Command
	err *Error
	// checked: the body's writer checked every rule the reader applies
	// to it (fast.go), so the Encoder skips the validating pass.
	checked bool
}

func (w *writer) fail(code Code, field, format string, args ...any) {
	if w.err == nil {
		w.err = errorf(0, code, "encode "+w.cmd.String()+" "+field+": "+format, args...)
	}
}

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }

func (w *writer) str(field, s string) {
	if len(s) > math.MaxUint16 {
		w.fail(CodeTooLarge, field, "%d bytes, want at most %d", len(s), math.MaxUint16)
		return
	}
	w.u16(uint16(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) blob(field string, p []byte) {
	if uint64(len(p)) > math.MaxUint32 {
		w.fail(CodeTooLarge, field, "%d bytes, want at most %d", len(p), uint64(math.MaxUint32))
		return
	}
	w.u32(uint32(len(p)))
	w.b = append(w.b, p...)
}

func (w *writer) count(field string, n int) {
	if uint64(n) > math.MaxUint32 {
		w.fail(CodeTooLarge, field, "%d records, want at most %d", n, MaxBatch)
		return
	}
	w.u32(uint32(n))
}

func (w *writer) ms(field string, d time.Duration) {
	if d < 0 || d > MaxHeartbeat {
		w.fail(CodeMalformed, field, "%v, want 0 to %v", d, MaxHeartbeat)
		return
	}
	w.u32(uint32(d / time.Millisecond))
}

func (w *writer) key(k id.Key) {
	w.str("crawler", k.Crawler)
	w.str("processor", k.Processor)
	w.str("url", k.URL)
}

func (w *writer) headers(h Headers) {
	if len(h) > math.MaxUint16 {
		w.fail(CodeTooLarge, "header count", "%d, want at most %d", len(h), MaxHeaders)
		return
	}
	w.u16(uint16(len(h)))
	for _, x := range h {
		w.str("header name", x.Name)
		w.str("header value", x.Value)
	}
}

func (w *writer) runs(countField string, v []Run) {
	w.count(countField, len(v))
	for _, x := range v {
		w.u64(x.JobID)
		w.u32(x.Attempt)
	}
}

func (w *writer) submitItem(s *SubmitItem) {
	w.key(s.Key)
	w.headers(s.Headers)
	w.blob("payload", s.Payload)
}
