package offheap

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"unsafe"
)

// Strings keeps strings (URLs) without a string header or a heap object
// each: a string's bytes go into a slab of fixed-size slots, one slab per
// size class (4, 8, ... 256 bytes: 1.5 bytes wasted on average), and its
// holder keeps a Ref (slot and an encoded length, 6 bytes). Freed slots are
// reused by the next string of the same class. Strings longer than the
// largest class (rare) are kept as Go strings in a table. Every slab is a
// few large pointer-free chunks from a Mem: the garbage collector has
// nothing to scan in them, and growing never copies.
//
// A URL's origin ("https://host.example.com", what comes before the path)
// is kept once for every URL that shares it (issue 21): such a URL's slot
// holds the origin's number (3 bytes) and the rest of the URL, so a URL
// of 57 bytes whose origin has 28 takes a slot of 32 bytes, not 60. An
// origin is kept, as a string of its own in these slots, while a URL uses
// it; its number is found through a table of 8-byte slots keyed by a hash
// of its bytes (originIndex). An origin costs about 25 bytes of Go heap
// and its slot, about what one URL saves, so an origin gets a number only
// when a URL names it a second time while the first is still remembered (a
// table of the hashes of the last origins seen, one per slot of 2^14): the
// lone URL of a host stays whole. A URL is split
// only when that puts it in a smaller class, and not when the origin table
// is full or a hash collides.
type Strings struct {
	classes [Classes]Slots
	long    []string // strings longer than MaxLen; index 0 unused
	freeL   []uint32
	origins origins
}

// origins are the origins URLs in Strings share, numbered from 1.
type origins struct {
	seed  maphash.Seed
	ids   originIndex // the low 32 bits of an origin's hash → its number
	refs  []Ref       // the origin's bytes, a whole string; index 0 unused
	users []uint32    // strings that use it; 0: the number is free
	free  []uint32
	seen  []uint32 // hashes of origins seen once (a tag per slot); made at first use
}

const seenBits = 14 // origins seen once that are remembered: 2^seenBits slots

// Ref names a string in Strings: its slot and its length, encoded. Len is
// the length for a whole string of at most MaxLen bytes; Long for a string
// kept as a Go string (Slot indexing the long table); Split|n for a URL
// kept as its origin's number and the rest, n bytes in all in its slot
// (Strings.Len says its length). Holders may use the values of Len above
// Split|MaxLen and below Long as marks of their own. The zero Ref is the
// empty string.
type Ref struct {
	Slot uint32
	Len  uint16
}

// The size classes.
const (
	ClassStep = 4                  // slot sizes are multiples of this
	MaxLen    = 256                // the largest slot; longer strings are Go strings
	Classes   = MaxLen / ClassStep // slabs
	Long      = 0xFFFF             // Ref.Len of a string longer than MaxLen
	Split     = 0x8000             // Ref.Len bit of a URL kept as its origin's number and the rest
)

const (
	originBytes = 3 // an origin's number in a split URL's slot
	maxOrigins  = 1<<(8*originBytes) - 1
	minOrigin   = 8 // shorter origins are not worth a number
)

// Class is the size class of a string of n bytes, 0 < n <= MaxLen.
func Class(n int) int { return (n - 1) / ClassStep }

// Init makes s take its slots' memory from m.
func (s *Strings) Init(m *Mem) {
	s.long = make([]string, 1)
	for c := range s.classes {
		s.classes[c].size = (c + 1) * ClassStep
		s.classes[c].mem = m
	}
	s.origins.seed = maphash.MakeSeed()
}

// originLen is the length of v's origin (scheme, "://" and authority: up
// to the path's first '/'), 0 when v has none or only an origin.
func originLen(v string) int {
	i := strings.Index(v[:min(len(v), 16)], "://")
	if i < 1 {
		return 0
	}
	j := strings.IndexByte(v[i+3:], '/')
	if j < 0 {
		return 0
	}
	return i + 3 + j
}

// Put stores a copy of v.
func (s *Strings) Put(v string) Ref {
	n := len(v)
	if n == 0 {
		return Ref{}
	}
	if n <= MaxLen {
		if p := originLen(v); p >= minOrigin && Class(originBytes+n-p) < Class(n) {
			if o := s.origin(v[:p]); o != 0 {
				st := originBytes + n - p
				c := &s.classes[Class(st)]
				i := c.Alloc()
				b := c.At(i)
				b[0], b[1], b[2] = byte(o), byte(o>>8), byte(o>>16)
				copy(b[originBytes:], v[p:])
				return Ref{i, Split | uint16(st)}
			}
		}
	}
	return s.putWhole(v)
}

// putWhole stores a copy of v as it is (not split).
func (s *Strings) putWhole(v string) Ref {
	if n := len(v); n <= MaxLen {
		c := &s.classes[Class(n)]
		i := c.Alloc()
		copy(c.At(i), v)
		return Ref{i, uint16(n)}
	}
	var i uint32
	if f := len(s.freeL); f > 0 {
		i = s.freeL[f-1]
		s.freeL = s.freeL[:f-1]
	} else {
		s.long = append(s.long, "")
		i = uint32(len(s.long) - 1)
	}
	s.long[i] = strings.Clone(v)
	return Ref{i, Long}
}

// origin is the number of origin o with one more user, made when o has
// none and was seen before; 0 when o has none yet (seen now for the first
// time, as far as seen remembers) or cannot have one (the table is full,
// or o's hash is another origin's).
func (s *Strings) origin(o string) uint32 {
	t := &s.origins
	h := maphash.String(t.seed, o)
	if i := t.ids.get(uint32(h)); i != 0 {
		if s.View(t.refs[i], nil) != o {
			return 0
		}
		t.users[i]++
		return i
	}
	if t.seen == nil {
		t.seen = make([]uint32, 1<<seenBits)
	}
	k, tag := h&(1<<seenBits-1), uint32(h>>32)|1
	if t.seen[k] != tag {
		t.seen[k] = tag
		return 0
	}
	t.seen[k] = 0
	var i uint32
	if f := len(t.free); f > 0 {
		i = t.free[f-1]
		t.free = t.free[:f-1]
	} else {
		if len(t.refs) == 0 {
			t.refs, t.users = make([]Ref, 1), make([]uint32, 1)
		}
		if len(t.refs) > maxOrigins {
			return 0
		}
		t.refs = append(t.refs, Ref{})
		t.users = append(t.users, 0)
		i = uint32(len(t.refs) - 1)
	}
	t.ids.put(uint32(h), i)
	t.refs[i] = s.putWhole(o)
	t.users[i] = 1
	return i
}

// originIndex finds an origin's number by the low 32 bits of its hash (its
// tag; two origins kept never share one: origin gives the second none):
// open addressing over 8-byte slots (tag, number), linear probing from the
// tag's home slot, at most 3/4 full, backward-shift deletion. About 13
// bytes an origin, where a Go map took over 30.
type originIndex struct {
	slots []uint64 // tag<<32 | number; 0: empty (numbers start at 1)
	n     int
}

// get is the number of the origin with tag, 0 when none has it.
func (x *originIndex) get(tag uint32) uint32 {
	if len(x.slots) == 0 {
		return 0
	}
	m := uint32(len(x.slots) - 1)
	for i := tag & m; x.slots[i] != 0; i = (i + 1) & m {
		if uint32(x.slots[i]>>32) == tag {
			return uint32(x.slots[i])
		}
	}
	return 0
}

// put adds origin number num (not 0) under tag, which no origin has.
func (x *originIndex) put(tag, num uint32) {
	if (x.n+1)*4 > len(x.slots)*3 {
		old := x.slots
		x.slots, x.n = make([]uint64, max(64, 2*len(old))), 0
		for _, v := range old {
			if v != 0 {
				x.put(uint32(v>>32), uint32(v))
			}
		}
	}
	m := uint32(len(x.slots) - 1)
	i := tag & m
	for x.slots[i] != 0 {
		i = (i + 1) & m
	}
	x.slots[i] = uint64(tag)<<32 | uint64(num)
	x.n++
}

// del removes the origin with tag (nothing when none has it), shifting
// back the entries after it that its slot delayed.
func (x *originIndex) del(tag uint32) {
	if len(x.slots) == 0 {
		return
	}
	m := uint32(len(x.slots) - 1)
	i := tag & m
	for x.slots[i] != 0 && uint32(x.slots[i]>>32) != tag {
		i = (i + 1) & m
	}
	if x.slots[i] == 0 {
		return
	}
	x.slots[i] = 0
	x.n--
	for j := (i + 1) & m; x.slots[j] != 0; j = (j + 1) & m {
		if home := uint32(x.slots[j]>>32) & m; (j-home)&m >= (j-i)&m {
			x.slots[i], x.slots[j] = x.slots[j], 0
			i = j
		}
	}
}

// releaseOrigin drops a user of origin i, forgetting it with its last.
func (s *Strings) releaseOrigin(i uint32) {
	t := &s.origins
	if t.users[i]--; t.users[i] > 0 {
		return
	}
	t.ids.del(uint32(maphash.String(t.seed, s.View(t.refs[i], nil))))
	s.Free(t.refs[i])
	t.refs[i] = Ref{}
	t.free = append(t.free, i)
}

// split says whether r is a split URL, with its slot's bytes.
func (s *Strings) split(r Ref) ([]byte, bool) {
	if r.Len&Split == 0 || r.Len == Long {
		return nil, false
	}
	st := int(r.Len &^ Split)
	return s.classes[Class(st)].At(r.Slot)[:st], true
}

// originOf is the origin number held in a split URL's slot bytes.
func originOf(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

// Parts returns r's string as two parts, head then tail, both aliasing
// the slots: valid only until r is freed (Free). A whole string is all
// tail.
func (s *Strings) Parts(r Ref) (head, tail string) {
	b, ok := s.split(r)
	if !ok {
		return "", s.View(r, nil)
	}
	rest := b[originBytes:]
	return s.View(s.origins.refs[originOf(b)], nil), unsafe.String(unsafe.SliceData(rest), len(rest))
}

// Len is the length of r's string.
func (s *Strings) Len(r Ref) int {
	h, t := s.Parts(r)
	return len(h) + len(t)
}

// String returns r's string in a new string (a long one shared).
func (s *Strings) String(r Ref) string {
	if r.Len == Long {
		return s.long[r.Slot]
	}
	h, t := s.Parts(r)
	if h == "" {
		return strings.Clone(t)
	}
	return h + t
}

// View returns r's string without copying it when it can: it aliases the
// slot, or for a split URL *scratch, into which its parts are put together
// (scratch's room reused; with a nil scratch, a new string). It is valid
// only until r is freed (Free) or scratch used again: callers must not
// keep it.
func (s *Strings) View(r Ref, scratch *[]byte) string {
	switch {
	case r.Len == 0:
		return ""
	case r.Len == Long:
		return s.long[r.Slot]
	case r.Len&Split != 0:
		h, t := s.Parts(r)
		if scratch == nil {
			return h + t
		}
		*scratch = append(append((*scratch)[:0], h...), t...)
		return unsafe.String(unsafe.SliceData(*scratch), len(*scratch))
	}
	b := s.classes[Class(int(r.Len))].At(r.Slot)
	return unsafe.String(unsafe.SliceData(b), r.Len)
}

// Compare compares the strings of a and b as strings.Compare does.
func (s *Strings) Compare(a, b Ref) int {
	ah, at := s.Parts(a)
	bh, bt := s.Parts(b)
	// Walk both as two pieces each.
	for {
		if ah == "" {
			ah, at = at, ""
		}
		if bh == "" {
			bh, bt = bt, ""
		}
		if ah == "" || bh == "" {
			return cmpLen(len(ah), len(bh))
		}
		n := min(len(ah), len(bh))
		if c := strings.Compare(ah[:n], bh[:n]); c != 0 {
			return c
		}
		ah, bh = ah[n:], bh[n:]
	}
}

func cmpLen(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// HasPrefix says whether r's string begins with p.
func (s *Strings) HasPrefix(r Ref, p string) bool {
	h, t := s.Parts(r)
	if len(p) <= len(h) {
		return strings.HasPrefix(h, p)
	}
	return strings.HasPrefix(p, h) && strings.HasPrefix(t, p[len(h):])
}

// ByteAt is byte i of r's string, which must have more than i bytes.
func (s *Strings) ByteAt(r Ref, i int) byte {
	h, t := s.Parts(r)
	if i < len(h) {
		return h[i]
	}
	return t[i-len(h)]
}

// Free releases r's string.
func (s *Strings) Free(r Ref) {
	if b, ok := s.split(r); ok {
		o := originOf(b)
		s.classes[Class(len(b))].Release(r.Slot)
		s.releaseOrigin(o)
		return
	}
	switch r.Len {
	case 0:
	case Long:
		s.long[r.Slot] = ""
		s.freeL = append(s.freeL, r.Slot)
	default:
		s.classes[Class(int(r.Len))].Release(r.Slot)
	}
}

// Check verifies s against the refs its holders keep (every string not
// freed): no slot is used twice or both used and free, every slot handed
// out is used or free, and every origin is kept, found by its hash and
// counted as used by exactly the split URLs that name it.
func (s *Strings) Check(refs []Ref) error {
	used := make(map[[2]uint32]bool) // (class, slot)
	perClass := make([]int, Classes)
	longs := make(map[uint32]bool)
	users := make(map[uint32]int) // origin → split refs naming it
	t := &s.origins
	add := func(r Ref) error {
		switch r.Len {
		case 0:
			return nil
		case Long:
			if longs[r.Slot] {
				return fmt.Errorf("long string %d used twice", r.Slot)
			}
			longs[r.Slot] = true
			return nil
		}
		n := int(r.Len &^ Split)
		if n == 0 || n > MaxLen {
			return fmt.Errorf("ref %+v: length %d, want 1 to %d", r, n, MaxLen)
		}
		k := [2]uint32{uint32(Class(n)), r.Slot}
		if r.Slot == 0 || r.Slot >= s.classes[k[0]].n {
			return fmt.Errorf("ref %+v: slot %d of class %d was never handed out", r, r.Slot, k[0])
		}
		if used[k] {
			return fmt.Errorf("string slot %v used twice", k)
		}
		used[k] = true
		perClass[k[0]]++
		if r.Len&Split != 0 {
			o := originOf(s.classes[k[0]].At(r.Slot))
			if o == 0 || int(o) >= len(t.users) || t.users[o] == 0 {
				return fmt.Errorf("split ref %+v names origin %d, which is not kept", r, o)
			}
			users[o]++
		}
		return nil
	}
	for _, r := range refs {
		if err := add(r); err != nil {
			return err
		}
	}
	live := 0
	for i := 1; i < len(t.refs); i++ {
		if t.users[i] == 0 {
			continue
		}
		live++
		if int(t.users[i]) != users[uint32(i)] {
			return fmt.Errorf("origin %d: %d users counted, %d split refs name it", i, t.users[i], users[uint32(i)])
		}
		if t.refs[i].Len&Split != 0 && t.refs[i].Len != Long {
			return fmt.Errorf("origin %d is itself split", i)
		}
		if err := add(t.refs[i]); err != nil {
			return fmt.Errorf("origin %d: %w", i, err)
		}
		if j := t.ids.get(uint32(maphash.String(t.seed, s.View(t.refs[i], nil)))); j != uint32(i) {
			return fmt.Errorf("origin %d is not found by its hash (found %d)", i, j)
		}
	}
	if live != t.ids.n {
		return fmt.Errorf("%d origins kept, %d hashes", live, t.ids.n)
	}
	if len(t.refs) > 0 && live+len(t.free) != len(t.refs)-1 {
		return fmt.Errorf("origins: %d kept + %d free != %d numbered", live, len(t.free), len(t.refs)-1)
	}
	for c := range s.classes {
		sl := &s.classes[c]
		free := 0
		for i := sl.free; i != 0; i = binary.LittleEndian.Uint32(sl.At(i)) {
			if used[[2]uint32{uint32(c), i}] {
				return fmt.Errorf("string class %d: slot %d is free and used", c, i)
			}
			free++
		}
		if handed := max(int(sl.n)-1, 0); free+perClass[c] != handed {
			return fmt.Errorf("string class %d: %d free + %d used != %d slots handed out", c, free, perClass[c], handed)
		}
	}
	if len(longs)+len(s.freeL) != len(s.long)-1 {
		return fmt.Errorf("long strings: %d used + %d free != %d", len(longs), len(s.freeL), len(s.long)-1)
	}
	return nil
}

// Slots is fixed-size byte slots addressed by a uint32, in chunks of 1024
// slots; slot 0 is never handed out, so 0 means none. A free slot's first
// four bytes link the free list.
type Slots struct {
	size   int
	mem    *Mem
	chunks [][]byte
	n      uint32 // slots handed out, 0 included
	free   uint32
}

const slotChunkBits = 10

// At is slot i's bytes.
func (s *Slots) At(i uint32) []byte {
	c := s.chunks[i>>slotChunkBits]
	off := int(i&(1<<slotChunkBits-1)) * s.size
	return c[off : off+s.size : off+s.size]
}

// Alloc hands out a slot (its bytes are not zeroed).
func (s *Slots) Alloc() uint32 {
	if i := s.free; i != 0 {
		s.free = binary.LittleEndian.Uint32(s.At(i))
		return i
	}
	if s.n == 0 {
		s.n = 1 // reserve slot 0
	}
	if int(s.n>>slotChunkBits) == len(s.chunks) {
		s.chunks = append(s.chunks, s.mem.Alloc(s.size<<slotChunkBits))
	}
	s.n++
	return s.n - 1
}

// Release frees slot i.
func (s *Slots) Release(i uint32) {
	binary.LittleEndian.PutUint32(s.At(i), s.free)
	s.free = i
}
