package broker

import (
	"encoding/binary"

	"drover/coord/id"
	"drover/coord/offheap"
)

// keyIndex maps a key's fingerprint to the newest job of the key whose
// record is kept (JobOfKey). It is an offheap.Index of job IDs (4 bytes:
// IDs are at most maxJobID): the fingerprint is not stored, it is read from
// the job's record, so an entry costs 4 bytes (at a load of 1/2 to 3/4:
// 5.3 to 8 bytes a job) where a Go map of fingerprint to ID costs about 40
// (issue 21). Every ID in the table names a job whose record is kept: the
// broker deletes the entry before it forgets the record. The table is
// memory of the job store's (package offheap: outside the Go heap once it
// is big); it grows by half, incrementally.
type keyIndex struct {
	x  offheap.Index[uint32]
	js *jobStore
}

func (x *keyIndex) init(js *jobStore) {
	x.js = js
	x.x.Init(js.mem, func(s uint32) uint64 { return fpHash(&js.at(s).fp) })
}

// fpHash is where a fingerprint goes: fingerprints are uniform hashes
// already, their first 8 bytes place them.
func fpHash(fp *id.Fingerprint) uint64 { return binary.LittleEndian.Uint64(fp[:8]) }

// get returns the job recorded for fp.
func (x *keyIndex) get(fp id.Fingerprint) (JobID, bool) {
	if x.x.Len() == 0 {
		return 0, false
	}
	j := x.x.Get(fpHash(&fp), func(s uint32) bool { return x.js.at(s).fp == fp })
	return JobID(j), j != 0
}

// set records j as fp's job, replacing the one recorded before.
func (x *keyIndex) set(fp id.Fingerprint, j JobID) {
	h := fpHash(&fp)
	if !x.x.Replace(h, func(s uint32) bool { return x.js.at(s).fp == fp }, uint32(j)) {
		x.x.Put(h, uint32(j))
	}
}

// del removes fp's entry if it names job j.
func (x *keyIndex) del(fp id.Fingerprint, j JobID) {
	x.x.Delete(fpHash(&fp), func(s uint32) bool { return s == uint32(j) })
}

// tickMove is how many positions of the growing key index's old table a
// Tick moves (a few hundred microseconds at most).
const tickMove = 1 << 14
