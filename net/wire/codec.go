package wire

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// protocolFrame is frame 0 of every message; shared, never modify.
var protocolFrame = []byte(Protocol)

// Encoder encodes messages into frames, reusing its buffers: the frames
// Encode returns are valid until the next call. pebbe/zmq4 copies frames
// into libzmq when it sends them, so an Encoder owned by the goroutine that
// owns a socket can encode each message straight into SendMessage. An
// Encoder must not be used by two goroutines at once; the zero value is
// ready to use.
type Encoder struct {
	buf     []byte
	frames  [MaxFrames][]byte
	scratch [cmdLimit]Message // per command, for the validating pass
	// The writer and reader live here rather than on the stack: they are
	// passed to interface methods, so they would escape and cost an
	// allocation per message.
	w writer
	r reader
}

// Encode encodes m into the frames a DEALER sends (a ROUTER prepends the
// routing id). It refuses, with a *Error wrapped in the returned error, a
// message that Decode would refuse: every limit and rule is checked by
// running the decoder's validating pass on the encoded body. Frames 0 and 1
// are shared by all messages and must not be modified.
func (e *Encoder) Encode(m Message) ([][]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("encode: nil message, want one of the wire message types")
	}
	c := m.Command()
	if !c.Valid() {
		return nil, fmt.Errorf("encode: command %d, want a DRV/2 command", c)
	}
	e.w = writer{b: e.buf[:0], cmd: c}
	w := &e.w
	w.u64(m.RequestID())
	if c.HasBody() {
		m.appendBody(w)
	}
	e.buf = w.b
	if w.err != nil {
		w.err.Req = m.RequestID()
		return nil, fmt.Errorf("encode %s: %w", c, w.err)
	}
	e.frames[0] = protocolFrame
	e.frames[1] = commands[c].frame
	e.frames[2] = w.b[:8:8]
	if !c.HasBody() {
		return e.frames[:3], nil
	}
	body := w.b[8:]
	if err := e.validate(c, m.RequestID(), body, w.checked); err != nil {
		return nil, fmt.Errorf("encode %s: %w", c, err)
	}
	e.frames[3] = body
	return e.frames[:4], nil
}

// validate runs the decoder's first pass over an encoded body, unless its
// writer checked it as it wrote it (checked).
func (e *Encoder) validate(c Command, req uint64, body []byte, checked bool) *Error {
	if len(body) > MaxBody {
		return errorf(req, CodeTooLarge, "%s body: %d bytes, want at most %d", c, len(body), MaxBody)
	}
	if checked {
		return nil
	}
	s := e.scratch[c]
	if s == nil {
		s = newMessage(c, req)
		// A JSON body is decoded whole into the scratch message; do not
		// keep that copy alive between calls.
		if !commands[c].json {
			e.scratch[c] = s
		}
	}
	e.r = newReader(body, c, req)
	r := &e.r
	s.decodeBody(r)
	r.end()
	err := r.err
	e.r = reader{} // drop references to the caller's data
	if err != nil {
		return err
	}
	return nil
}

var encoders = sync.Pool{New: func() any { return new(Encoder) }}

// Encode encodes m into freshly allocated frames (one allocation for the
// request id and body, one for the frame list). See Encoder.Encode for the
// rules; use an Encoder to reuse buffers instead.
func Encode(m Message) ([][]byte, error) {
	e := encoders.Get().(*Encoder)
	defer encoders.Put(e)
	frames, err := e.Encode(m)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, f := range frames[2:] {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(frames))
	out[0], out[1] = frames[0], frames[1]
	for i, f := range frames[2:] {
		start := len(buf)
		buf = append(buf, f...)
		out[2+i] = buf[start:len(buf):len(buf)]
	}
	return out, nil
}

// Decode validates frames (a message as the DEALER sent it: a ROUTER strips
// the routing-id frame first) and returns the message, or a *Error with the
// code to answer with: 400 for bad framing, encoding, enum values, counts or
// trailing bytes, 413 for anything over a limit, 501 for an unknown command,
// 505 for another protocol version. The error's Req is the message's request
// id when frame 2 could be read.
//
// Decode takes ownership of frames: they must not change afterwards. The
// message it returns does not copy byte fields (payloads, outputs): they
// alias the body frame, with capacity capped at their length. The strings
// of a key batch (REQUEST, QUEUE) alias the body frame too; the other
// messages' strings share one allocation. A caller that keeps one string
// of a large message for long while dropping the rest may strings.Clone
// it.
func Decode(frames [][]byte) (Message, error) {
	m, err := decode(frames, true, nil)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// decode is Decode; fast lets a message's one-pass decoder try first
// (fast.go; tests compare it with the reader alone), with d's room when d
// is not nil (Decoder).
func decode(frames [][]byte, fast bool, d *Decoder) (Message, *Error) {
	var req uint64
	if len(frames) >= 3 && len(frames[2]) == 8 {
		req = binary.BigEndian.Uint64(frames[2])
	}
	if len(frames) == 0 {
		return nil, errorf(0, CodeMalformed, "empty message, want at least 3 frames")
	}
	if err := checkProtocol(frames[0], req); err != nil {
		return nil, err
	}
	if len(frames) > MaxFrames {
		return nil, errorf(req, CodeMalformed, "%d frames, want at most %d", len(frames), MaxFrames)
	}
	if len(frames) < 3 {
		return nil, errorf(0, CodeMalformed, "%d frames, want protocol, command and request id at least", len(frames))
	}
	c := lookupCommand(frames[1])
	if c == 0 {
		return nil, errorf(req, CodeUnknownCommand, "command %q is not a DRV/2 command", clip(frames[1]))
	}
	if len(frames[2]) != 8 {
		return nil, errorf(0, CodeMalformed, "%s request id: %d bytes, want 8", c, len(frames[2]))
	}
	want := 3
	if c.HasBody() {
		want = 4
	}
	if len(frames) != want {
		return nil, errorf(req, CodeMalformed, "%s: %d frames, want %d", c, len(frames), want)
	}
	m := newMessage(c, req)
	if !c.HasBody() {
		return m, nil
	}
	body := frames[3]
	if len(body) > MaxBody {
		return nil, errorf(req, CodeTooLarge, "%s body: %d bytes, want at most %d", c, len(body), MaxBody)
	}
	if f, ok := m.(fastDecoder); ok && fast && f.decodeFast(body, d) {
		return m, nil
	}
	r := newReader(body, c, req)
	m.decodeBody(&r)
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	r.prepareFill()
	m.decodeBody(&r)
	if r.err != nil {
		// The first pass accepted what the second refused: a bug here, not
		// bad input. Report it rather than return half a message.
		return nil, errorf(req, CodeInternal, "%s: decoder passes disagree: %s", c, r.err.Msg)
	}
	return m, nil
}

// checkProtocol accepts "DRV2", answers 505 for another DRV version and 400
// for anything else.
func checkProtocol(f []byte, req uint64) *Error {
	if string(f) == Protocol {
		return nil
	}
	if isVersion(f) {
		return errorf(req, CodeVersion, "protocol %q is not supported: this peer speaks only %q (DRV/%c, docs/PROTOCOL.md section 12)", f, Protocol, Protocol[3])
	}
	return errorf(req, CodeMalformed, "protocol frame %q, want %q", clip(f), Protocol)
}

// isVersion reports whether f names a DRV version: "DRV" and a digit.
func isVersion(f []byte) bool {
	return len(f) == 4 && string(f[:3]) == "DRV" && f[3] >= '0' && f[3] <= '9'
}

// EncodeVersionError encodes e, the ERROR 505 that Decode returned for a
// message whose frame 0 was proto, in the version the refused message
// spoke: ERROR's body (code, message) is the same in every DRV version, so
// an older peer reads why it was refused instead of refusing the answer
// in turn. For any other proto it is Encode.
func EncodeVersionError(e *Error, proto []byte) ([][]byte, error) {
	frames, err := Encode(e)
	if err != nil || !isVersion(proto) {
		return frames, err
	}
	frames[0] = append([]byte(nil), proto...)
	return frames, nil
}

// clip shortens a frame quoted in an error message.
func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}
