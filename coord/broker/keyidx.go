package broker

import (
	"encoding/binary"
	"unsafe"

	"drover/coord/id"
	"drover/coord/offheap"
)

// keyIndex maps a key's fingerprint to the newest job of the key whose
// record is kept (JobOfKey). It is an open-addressing table of job IDs with
// linear probing: the fingerprint is not stored, it is read from the job's
// record, so an entry costs 8 bytes (at a load of 1/2 to 3/4: 11 to 16
// bytes a job) where a Go map of fingerprint to ID costs about 40 (issue
// 21). Every ID in the table names a job whose record is kept: the broker
// deletes the entry before it forgets the record. The table is memory of
// the job store's (package offheap: outside the Go heap once it is big).
type keyIndex struct {
	slots []JobID // 0: empty; len is 0 or a power of two
	raw   []byte  // slots' memory
	n     int
}

// keyIndexMin is the smallest table allocated.
const keyIndexMin = 64

func (x *keyIndex) home(fp *id.Fingerprint) int {
	// Fingerprints are uniform hashes already: their first 8 bytes index.
	return int(binary.LittleEndian.Uint64(fp[:8]) & uint64(len(x.slots)-1))
}

// get returns the job recorded for fp.
func (x *keyIndex) get(js *jobStore, fp id.Fingerprint) (JobID, bool) {
	if x.n == 0 {
		return 0, false
	}
	m := len(x.slots) - 1
	for i := x.home(&fp); ; i = (i + 1) & m {
		j := x.slots[i]
		if j == 0 {
			return 0, false
		}
		if js.get(j).fp == fp {
			return j, true
		}
	}
}

// set records j as fp's job, replacing the one recorded before.
func (x *keyIndex) set(js *jobStore, fp id.Fingerprint, j JobID) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow(js)
	}
	m := len(x.slots) - 1
	for i := x.home(&fp); ; i = (i + 1) & m {
		k := x.slots[i]
		if k == 0 {
			x.slots[i] = j
			x.n++
			return
		}
		if js.get(k).fp == fp {
			x.slots[i] = j
			return
		}
	}
}

// del removes fp's entry if it names job j.
func (x *keyIndex) del(js *jobStore, fp id.Fingerprint, j JobID) {
	if x.n == 0 {
		return
	}
	m := len(x.slots) - 1
	i := x.home(&fp)
	for ; ; i = (i + 1) & m {
		k := x.slots[i]
		if k == 0 {
			return
		}
		if k == j {
			break
		}
	}
	// Backward-shift deletion: move later entries of the probe run into
	// the hole when their home position allows it, so no tombstone stays.
	x.slots[i] = 0
	x.n--
	for k := (i + 1) & m; x.slots[k] != 0; k = (k + 1) & m {
		fpk := js.get(x.slots[k]).fp
		h := x.home(&fpk)
		// The entry at k may fill the hole at i unless its home lies
		// cyclically in (i, k].
		if (k-h)&m >= (k-i)&m {
			x.slots[i], x.slots[k] = x.slots[k], 0
			i = k
		}
	}
	if len(x.slots) > keyIndexMin && x.n*8 < len(x.slots) {
		x.resize(js, len(x.slots)/2)
	}
}

func (x *keyIndex) grow(js *jobStore) {
	x.resize(js, max(len(x.slots)*2, keyIndexMin))
}

func (x *keyIndex) resize(js *jobStore, size int) {
	old, oldRaw := x.slots, x.raw
	x.raw = js.mem.Table(size * int(unsafe.Sizeof(JobID(0))))
	x.slots = offheap.View[JobID](x.raw, size)
	defer js.mem.Release(oldRaw)
	m := size - 1
	for _, j := range old {
		if j == 0 {
			continue
		}
		fp := js.get(j).fp
		i := x.home(&fp)
		for x.slots[i] != 0 {
			i = (i + 1) & m
		}
		x.slots[i] = j
	}
}
