package ledger

import (
	"encoding/binary"

	"drover/coord/id"
	"drover/coord/offheap"
)

// index finds the live record of a fingerprint: an offheap.Index of 8-byte
// slots (32 bits of the fingerprint as a tag, then the record's index; 0
// is an empty slot), grown by half and incrementally. The tag is the
// fingerprint's bytes 4 to 8 and the slot's position comes from it (the
// index's hash is the tag), so a probe past another key is settled in the
// table without touching its record, and a growth moves a slot, or a
// deletion shifts it, without reading its record either (a lent key's
// record is its job's, elsewhere in memory). Fingerprints are SHA-256
// prefixes: they need no further hashing.
type index struct {
	x    offheap.Index[uint64]
	recs *slab[rec]
	jobs *Jobs // the holder of the jobs lent keys (lend.go)
	mem  *offheap.Mem
	sink uint64 // what warm read, kept so that the reads are not optimised away
}

func (x *index) init(mem *offheap.Mem, recs *slab[rec], jobs *Jobs) {
	x.mem, x.recs, x.jobs = mem, recs, jobs
	x.x.Init(mem, func(s uint64) uint64 { return s &^ 0xFFFFFFFF })
}

// fpOf is the fingerprint of the key slot s names: its record's, or for a
// key lent to a job (lentBit), the job's.
func (x *index) fpOf(s uint64) id.Fingerprint {
	if uint32(s)&lentBit != 0 {
		return (*x.jobs).JobFP(uint32(s) &^ lentBit)
	}
	return x.recs.at(int32(uint32(s))).fp
}

// fpTag is fp's tag in the slot's high half: the index's hash, which
// places the slot.
func fpTag(fp *id.Fingerprint) uint64 { return uint64(binary.LittleEndian.Uint32(fp[4:8])) << 32 }

// get returns the index of fp's record, or 0; for a key lent to a job
// (lend.go) the job's number with lentBit, a negative number.
func (x *index) get(fp *id.Fingerprint) int32 {
	tag := fpTag(fp)
	s := x.x.Get(tag, func(s uint64) bool {
		return s&^0xFFFFFFFF == tag && x.fpOf(s) == *fp
	})
	return int32(uint32(s))
}

// set makes fp's slot, which names ri (as get returns it), name v
// (a record's index, or a job's number with lentBit).
func (x *index) set(fp *id.Fingerprint, ri int32, v uint64) {
	x.x.Replace(fpTag(fp), func(s uint64) bool { return uint32(s) == uint32(ri) }, fpTag(fp)|v)
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
func (x *index) warmSlot(fp *id.Fingerprint) uint64 { return x.x.Home(fpTag(fp)) }

// warmRec loads the record fp's home slot names when its tag is fp's.
func (x *index) warmRec(fp *id.Fingerprint) uint64 {
	if s := x.x.Home(fpTag(fp)); s&^0xFFFFFFFF == fpTag(fp) && uint32(s)&lentBit == 0 {
		return uint64(x.recs.at(int32(uint32(s))).state)
	}
	return 0
}

// put adds record ri under fp, which must be absent.
func (x *index) put(fp *id.Fingerprint, ri int32) {
	x.x.Put(fpTag(fp), fpTag(fp)|uint64(uint32(ri)))
}

// del removes record ri (or the job get named as ri), indexed under fp.
func (x *index) del(fp *id.Fingerprint, ri int32) {
	x.x.Delete(fpTag(fp), func(s uint64) bool { return uint32(s) == uint32(ri) })
}
