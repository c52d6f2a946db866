package offheap

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

// Strings keeps strings (URLs) without a string header or a heap object
// each: a string's bytes go into a slab of fixed-size slots, one slab per
// size class (4, 8, ... 256 bytes: 1.5 bytes wasted on average), and its
// holder keeps a Ref (slot and length, 6 bytes). Freed slots are reused by the next string of the same
// class. Strings longer than the largest class (rare) are kept as Go
// strings in a table. Every slab is a few large pointer-free chunks from a
// Mem: the garbage collector has nothing to scan in them, and growing
// never copies.
type Strings struct {
	classes [Classes]Slots
	long    []string // strings longer than MaxLen; index 0 unused
	freeL   []uint32
}

// Ref names a string in Strings: its slot and its length (Long: kept as a
// Go string, Slot indexing the long table). The zero Ref is the empty
// string.
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
}

// Put stores a copy of v.
func (s *Strings) Put(v string) Ref {
	switch n := len(v); {
	case n == 0:
		return Ref{}
	case n <= MaxLen:
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

// String returns r's string in a new string (a long one shared).
func (s *Strings) String(r Ref) string {
	if r.Len == Long {
		return s.long[r.Slot]
	}
	return strings.Clone(s.View(r))
}

// View returns r's string without copying it: it aliases the slot, and is
// valid only until r is freed (Free). Callers must not keep it.
func (s *Strings) View(r Ref) string {
	switch r.Len {
	case 0:
		return ""
	case Long:
		return s.long[r.Slot]
	}
	b := s.classes[Class(int(r.Len))].At(r.Slot)
	return unsafe.String(unsafe.SliceData(b), r.Len)
}

// Free releases r's string.
func (s *Strings) Free(r Ref) {
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
// freed): no slot is used twice or both used and free, and every slot
// handed out is used or free.
func (s *Strings) Check(refs []Ref) error {
	used := make(map[[2]uint32]bool) // (class, slot)
	perClass := make([]int, Classes)
	longs := make(map[uint32]bool)
	for _, r := range refs {
		switch r.Len {
		case 0:
		case Long:
			if longs[r.Slot] {
				return fmt.Errorf("long string %d used twice", r.Slot)
			}
			longs[r.Slot] = true
		default:
			k := [2]uint32{uint32(Class(int(r.Len))), r.Slot}
			if used[k] {
				return fmt.Errorf("string slot %v used twice", k)
			}
			used[k] = true
			perClass[k[0]]++
		}
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
