package ledger

import (
	"encoding/binary"

	"drover/coord/id"
	"drover/coord/offheap"
)

// index finds the live record of a fingerprint: an open-addressing table
// with linear probing, one 8-byte slot per entry (32 bits of the
// fingerprint as a tag, then the record's index; 0 is an empty slot), kept
// at most 3/4 full. The slot's position comes from the fingerprint's first
// 8 bytes and the tag from the next 4, so a probe past another key is
// settled in the table without touching its record. Deletion shifts the
// entries after the hole back (no tombstones), so probes stay short under
// churn. Fingerprints are SHA-256 prefixes: they need no further hashing.
type index struct {
	slots []uint64
	raw   []byte // slots' memory
	mask  uint64
	n     int
	mem   *offheap.Mem
	sink  uint64 // what warm read, kept so that the reads are not optimised away
}

const indexMinSlots = 64

func (x *index) init(mem *offheap.Mem) {
	x.mem = mem
	x.setTable(indexMinSlots)
	x.n = 0
}

// setTable gives the index an empty table of n slots, a power of two.
func (x *index) setTable(n int) {
	x.raw = x.mem.Table(8 * n)
	x.slots = offheap.View[uint64](x.raw, n)
	x.mask = uint64(n - 1)
}

func fpHome(fp *id.Fingerprint) uint64 { return binary.LittleEndian.Uint64(fp[:8]) }
func fpTag(fp *id.Fingerprint) uint64  { return uint64(binary.LittleEndian.Uint32(fp[8:12])) << 32 }

// get returns the index of fp's record, or 0.
func (x *index) get(fp *id.Fingerprint, recs *slab[rec]) int32 {
	tag := fpTag(fp)
	for i := fpHome(fp) & x.mask; ; i = (i + 1) & x.mask {
		s := x.slots[i]
		if s == 0 {
			return 0
		}
		if s&^0xFFFFFFFF == tag && recs.at(int32(uint32(s))).fp == *fp {
			return int32(uint32(s))
		}
	}
}

// Warming. A big table's slots and records are mostly not in cache, and a
// batch's probes, each behind the work on the key before it, would wait for
// their misses one at a time. A batch first warms a window of keys: their
// home slots in one loop, then the records those slots name under the same
// tag in another. The loads of a loop do not depend on one another and no
// branch waits on a miss, so the processor overlaps the misses; the probes
// that follow find the lines in cache.

// warmWindow is how many keys a batch warms ahead: their slots and
// records (a few hundred KiB at most) stay in cache until probed.
const warmWindow = 256

// warmSlot loads fp's home slot.
func (x *index) warmSlot(fp *id.Fingerprint) uint64 { return x.slots[fpHome(fp)&x.mask] }

// warmRec loads the record fp's home slot names when its tag is fp's.
func (x *index) warmRec(fp *id.Fingerprint, recs *slab[rec]) uint64 {
	if s := x.slots[fpHome(fp)&x.mask]; s&^0xFFFFFFFF == fpTag(fp) {
		return uint64(recs.at(int32(uint32(s))).state)
	}
	return 0
}

// put adds record ri under fp, which must be absent, growing the table
// when it would pass 3/4 full.
func (x *index) put(fp *id.Fingerprint, ri int32, recs *slab[rec]) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow(recs)
	}
	x.insert(fp, ri)
	x.n++
}

func (x *index) insert(fp *id.Fingerprint, ri int32) {
	i := fpHome(fp) & x.mask
	for x.slots[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.slots[i] = fpTag(fp) | uint64(uint32(ri))
}

// grow doubles the table, reading the live records in slab order.
func (x *index) grow(recs *slab[rec]) {
	old := x.raw
	x.setTable(2 * len(x.slots))
	x.mem.Release(old)
	for ri := int32(1); ri < int32(recs.size()); ri++ {
		if r := recs.at(ri); r.state != 0 {
			x.insert(&r.fp, ri)
		}
	}
}

// del removes record ri, indexed under fp.
func (x *index) del(fp *id.Fingerprint, ri int32, recs *slab[rec]) {
	i := fpHome(fp) & x.mask
	for uint32(x.slots[i]) != uint32(ri) {
		i = (i + 1) & x.mask
	}
	// Shift back each following entry of the run that may move into the
	// hole (its home is not cyclically in (hole, its position]).
	for j := (i + 1) & x.mask; x.slots[j] != 0; j = (j + 1) & x.mask {
		home := fpHome(&recs.at(int32(uint32(x.slots[j]))).fp) & x.mask
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
}
