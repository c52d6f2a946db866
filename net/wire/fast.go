package wire

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"drover/coord/id"
)

// One-pass paths for the messages of dedup: REQUEST and QUEUE (a batch of
// keys) and VERDICTS and ANSWER (a batch of verdicts). A client checking a
// thousand keys against the ledger sends two of them and receives two per
// batch, so the reader's two passes (validate, then fill) and the
// Encoder's validating pass over what it just wrote were a large part of
// both ends' CPU per key.
//
// Both sides hold to the general path's rules by construction: the fast
// decoder accepts only bodies the reader accepts, building the same
// message; at the first thing it does not accept it gives up and the
// reader decodes the body again, so a refusal names exactly what the
// reader names. The writer checks each field as it writes it, with the
// reader's limits and character rules; a body it has checked needs no
// validating pass, and one it has not (anything it doubts) gets it.
// FuzzDecode and TestFastPathsAgree hold each fast path to the general one.

// fastDecoder is a message with a one-pass decoder for valid bodies: it
// reports false, leaving the message as it was, at the first thing it does
// not accept. d, when not nil, lends its room (Decoder).
type fastDecoder interface {
	decodeFast(body []byte, d *Decoder) bool
}

func (m *Request) decodeFast(b []byte, d *Decoder) bool {
	keys, ok := fastKeys(b, d.room())
	if ok {
		m.Keys = d.keep(keys)
	}
	return ok
}

func (m *Queue) decodeFast(b []byte, d *Decoder) bool {
	keys, ok := fastKeys(b, d.room())
	if ok {
		m.Keys = d.keep(keys)
	}
	return ok
}

func (m *Verdicts) decodeFast(b []byte, _ *Decoder) bool {
	items, ok := fastVerdicts(b, true)
	if ok {
		m.Items = items
	}
	return ok
}

func (m *Answer) decodeFast(b []byte, _ *Decoder) bool {
	items, ok := fastVerdicts(b, false)
	if ok {
		m.Items = items
	}
	return ok
}

// fastCount reads a batch's record count, 1 to MaxBatch records of at
// least minSize bytes each in what follows it.
func fastCount(b []byte, minSize int) (int, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n := uint64(binary.BigEndian.Uint32(b))
	if n < 1 || n > MaxBatch || n*uint64(minSize) > uint64(len(b)-4) {
		return 0, false
	}
	return int(n), true
}

// fastField reads a u16-length string of min to max bytes of printable
// text (kLine) at off; it returns the bytes (aliasing b) and the offset
// after them.
func fastField(b []byte, off, min, max int) ([]byte, int, bool) {
	if len(b)-off < 2 {
		return nil, off, false
	}
	n := int(binary.BigEndian.Uint16(b[off:]))
	off += 2
	if n < min || n > max || n > len(b)-off {
		return nil, off, false
	}
	p := b[off : off+n : off+n]
	return p, off + n, true
}

// isLine reports whether p is printable text (kLine): eight bytes at a
// time while they are printable ASCII, then checkKind from the first word
// that is not (a character boundary, as everything before it is ASCII).
func isLine(p []byte) bool {
	i := 0
	for ; i+8 <= len(p); i += 8 {
		if !printableASCII8(binary.LittleEndian.Uint64(p[i:])) {
			return checkKind(p[i:], kLine) == ""
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f {
			return checkKind(p[i:], kLine) == ""
		}
	}
	return true
}

// arena is the one allocation the reasons of a fast-decoded verdict batch
// that are not the ledger's words share. Its capacity bounds what the body
// can hold, so appending never moves bytes a string already points at
// (were it to, the old bytes would stay as they are: strings made earlier
// stay valid either way).
type arena []byte

func (a *arena) put(p []byte) string {
	start := len(*a)
	*a = append(*a, p...)
	return unsafe.String(&(*a)[start], len(p))
}

// fastKeys decodes a key batch (REQUEST, QUEUE) in one pass, into room
// when it is big enough. Its strings are not copied: they alias the body
// (Decode owns it), and the names a key shares with the previous key are
// the previous key's strings, as reader.keys makes them.
func fastKeys(b []byte, room []id.Key) ([]id.Key, bool) {
	n, ok := fastCount(b, minKey)
	if !ok {
		return nil, false
	}
	keys := room[:0]
	if cap(keys) >= n {
		keys = keys[:n] // every field of each is set below
	} else {
		keys = make([]id.Key, n)
	}
	var crawler, processor string
	off := 4
	for i := range keys {
		k := &keys[i]
		if k.Crawler, off, ok = fastName(b, off, &crawler); !ok {
			return nil, false
		}
		if k.Processor, off, ok = fastName(b, off, &processor); !ok {
			return nil, false
		}
		var p []byte
		if p, off, ok = fastField(b, off, 1, MaxURL); !ok || !isLine(p) {
			return nil, false
		}
		k.URL = unsafe.String(&p[0], len(p))
	}
	return keys, off == len(b)
}

// fastName reads a crawler or processor name: last is the previous key's
// (a name checked already), returned again when this one is the same.
func fastName(b []byte, off int, last *string) (string, int, bool) {
	p, off, ok := fastField(b, off, 0, MaxName)
	if !ok || len(p) == 0 {
		return "", off, ok
	}
	if *last == string(p) {
		return *last, off, true
	}
	if !isLine(p) {
		return "", off, false
	}
	*last = unsafe.String(&p[0], len(p))
	return *last, off, true
}

// fastVerdicts decodes a verdict batch (VERDICTS, or ANSWER when wait is
// not allowed) in one pass. The ledger's reasons are a few words, returned
// as constants; any other reason is copied into one allocation.
func fastVerdicts(b []byte, waitAllowed bool) ([]VerdictItem, bool) {
	n, ok := fastCount(b, minVerdict)
	if !ok {
		return nil, false
	}
	items := make([]VerdictItem, n)
	var strs arena
	off := 4
	for i := range items {
		if len(b)-off < minVerdict {
			return nil, false
		}
		it := &items[i]
		copy(it.Fingerprint[:], b[off:off+len(it.Fingerprint)])
		off += len(it.Fingerprint)
		it.Verdict = Verdict(b[off])
		if !it.Verdict.Valid() || !waitAllowed && it.Verdict == VerdictWait {
			return nil, false
		}
		var p []byte
		if p, off, ok = fastField(b, off+1, 0, MaxReason); !ok {
			return nil, false
		}
		if len(p) == 0 {
			continue
		}
		if it.Reason = knownReason(p); it.Reason != "" {
			continue
		}
		if !isLine(p) {
			return nil, false
		}
		if strs == nil {
			strs = make(arena, 0, len(b)-off+len(p))
		}
		it.Reason = strs.put(p)
	}
	return items, off == len(b)
}

// knownReason is p as one of the ledger's reason words (docs/PROTOCOL.md
// §6), or "" when it is none of them.
func knownReason(p []byte) string {
	switch string(p) {
	case "queued":
		return "queued"
	case "owner":
		return "owner"
	case "done":
		return "done"
	case "failed":
		return "failed"
	case "requested":
		return "requested"
	case "handover":
		return "handover"
	case "not-owner":
		return "not-owner"
	case "unknown":
		return "unknown"
	case "wrong-state":
		return "wrong-state"
	}
	return ""
}

// keysChecked writes a key batch, as writer.keys does, and reports
// whether every rule the reader applies to it held (the count, each name's
// and URL's length and characters): false sends the body through the
// validating pass.
func (w *writer) keysChecked(keys []id.Key) bool {
	warmKeys(keys)
	w.count("count", len(keys))
	ok := len(keys) >= 1 && len(keys) <= MaxBatch
	var crawler, processor string
	for i := range keys {
		k := &keys[i]
		w.key(*k)
		ok = ok && nameOK(k.Crawler, &crawler) && nameOK(k.Processor, &processor) &&
			len(k.URL) >= 1 && len(k.URL) <= MaxURL && isLine(bytesOf(k.URL))
	}
	return ok
}

// nameOK checks a crawler or processor name; last is the previous key's,
// checked already.
func nameOK(s string, last *string) bool {
	if s == *last {
		return true
	}
	if len(s) > MaxName || !isLine(bytesOf(s)) {
		return false
	}
	*last = s
	return true
}

// verdictsChecked writes a verdict batch, as writer.verdicts does, and
// reports whether every rule the reader applies to it held (as
// keysChecked).
func (w *writer) verdictsChecked(items []VerdictItem, waitAllowed bool) bool {
	w.count("count", len(items))
	ok := len(items) >= 1 && len(items) <= MaxBatch
	for i := range items {
		it := &items[i]
		w.b = append(w.b, it.Fingerprint[:]...)
		w.u8(uint8(it.Verdict))
		w.str("reason", it.Reason)
		ok = ok && it.Verdict.Valid() && (waitAllowed || it.Verdict != VerdictWait) &&
			len(it.Reason) <= MaxReason && isLine(bytesOf(it.Reason))
	}
	return ok
}

// bytesOf is s's bytes, for reading only.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Decoder decodes as Decode does, but the keys of the key batches it
// decodes (REQUEST, QUEUE: a thousand keys are 48 KB) go into room it
// keeps from one message to the next, written while still in cache
// rather than allocated anew. A message's Keys are valid until the
// decoder's next Decode: a caller that keeps the message longer takes
// them first (OwnKeys). A zero Decoder is ready; use it from one
// goroutine.
type Decoder struct {
	keys []id.Key
}

// Decode is Decode, with the decoder's room for key batches.
func (d *Decoder) Decode(frames [][]byte) (Message, error) {
	m, err := decode(frames, true, d)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// room is the room for the next key batch (none without a decoder).
func (d *Decoder) room() []id.Key {
	if d == nil {
		return nil
	}
	return d.keys
}

// keep makes keys the room for the next key batch, and returns them.
func (d *Decoder) keep(keys []id.Key) []id.Key {
	if d != nil && cap(keys) <= MaxBatch {
		d.keys = keys
	}
	return keys
}

// OwnKeys gives a key batch a Decoder decoded (REQUEST, QUEUE) keys of
// its own, for a caller that keeps it past the decoder's next Decode;
// any other message is left as it is.
func OwnKeys(m Message) {
	switch m := m.(type) {
	case *Request:
		m.Keys = slices.Clone(m.Keys)
	case *Queue:
		m.Keys = slices.Clone(m.Keys)
	}
}

// warmSink keeps what warmKeys reads, so that the reads stay.
var warmSink byte

// warmKeys loads the first and last byte of each key's URL before the
// batch is copied. A batch's keys are often far apart in memory (a
// crawler's repeats, from anywhere in what it has seen), and one copy
// after another waited for each one's cache misses in turn; these loads
// do not depend on one another, so their misses overlap, and the copies
// find the lines in cache.
func warmKeys(keys []id.Key) {
	var x byte
	for i := range keys {
		if u := keys[i].URL; len(u) > 0 {
			x += u[0] + u[len(u)-1]
		}
	}
	warmSink += x
}
