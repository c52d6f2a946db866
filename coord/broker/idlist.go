package broker

import (
	"iter"
	"math"
)

// idList is a host's job IDs in submission order (host.ids), 4 bytes an
// ID (issue 21: a list of 8-byte IDs, with the room append leaves, was
// about 12 bytes of Go heap per queued job). 0 marks a position no job
// holds any more (paged out). IDs stay below 2^32 in practice (a restore
// takes none above: maxRestoreID); a list that is given one that does not
// fit keeps every ID whole from then on.
type idList struct {
	narrow []uint32
	wide   []JobID // nil until an ID does not fit in narrow
}

// len is the number of positions.
func (l *idList) len() int {
	if l.wide != nil {
		return len(l.wide)
	}
	return len(l.narrow)
}

// at is the ID at position i, 0 for none.
func (l *idList) at(i int) JobID {
	if l.wide != nil {
		return l.wide[i]
	}
	return JobID(l.narrow[i])
}

// push appends id.
func (l *idList) push(id JobID) {
	switch {
	case l.wide != nil:
		l.wide = append(l.wide, id)
	case id <= math.MaxUint32:
		l.narrow = append(l.narrow, uint32(id))
	default:
		l.wide = make([]JobID, len(l.narrow), len(l.narrow)+1)
		for i, v := range l.narrow {
			l.wide[i] = JobID(v)
		}
		l.narrow = nil
		l.wide = append(l.wide, id)
	}
}

// clear empties position i (its job was paged out).
func (l *idList) clear(i int) {
	if l.wide != nil {
		l.wide[i] = 0
		return
	}
	l.narrow[i] = 0
}

// all yields the IDs in position order, 0 for an empty position.
func (l *idList) all() iter.Seq[JobID] {
	return func(yield func(JobID) bool) {
		for i := range l.len() {
			if !yield(l.at(i)) {
				return
			}
		}
	}
}

// withRoom is an empty list with room for n IDs.
func withRoom(n int) idList { return idList{narrow: make([]uint32, 0, n)} }
