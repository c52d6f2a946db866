package broker

import "iter"

// idList is a host's job IDs in submission order (host.ids), 4 bytes an
// ID (job IDs are at most maxJobID). Up to idChunk IDs are one slice grown
// by append; beyond, the list is chunks of idChunk IDs, each made whole,
// so that a long list carries at most one chunk's room (issue 21: a list
// of 8-byte IDs with append's room was about 12 bytes of Go heap per
// queued job; 4-byte IDs with append's room, a quarter of a long slice,
// about 7 at 1,000 jobs a host). 0 marks a position no job holds any more
// (paged out).
type idList struct {
	chunks [][]uint32
	n      int
}

const (
	idChunkBits = 8
	idChunk     = 1 << idChunkBits
)

// len is the number of positions.
func (l *idList) len() int { return l.n }

// at is the ID at position i, 0 for none.
func (l *idList) at(i int) JobID {
	return JobID(l.chunks[i>>idChunkBits][i&(idChunk-1)])
}

// push appends id, which is at most maxJobID.
func (l *idList) push(id JobID) {
	k := len(l.chunks) - 1
	if k < 0 || len(l.chunks[k]) == idChunk {
		var c []uint32 // the first chunk grows by append
		if k >= 0 {
			c = make([]uint32, 0, idChunk)
		}
		l.chunks = append(l.chunks, c)
		k++
	}
	l.chunks[k] = append(l.chunks[k], uint32(id))
	l.n++
}

// clear empties position i (its job was paged out).
func (l *idList) clear(i int) {
	l.chunks[i>>idChunkBits][i&(idChunk-1)] = 0
}

// all yields the IDs in position order, 0 for an empty position.
func (l *idList) all() iter.Seq[JobID] {
	return func(yield func(JobID) bool) {
		for _, c := range l.chunks {
			for _, id := range c {
				if !yield(JobID(id)) {
					return
				}
			}
		}
	}
}

// withRoom is an empty list with room for n IDs in its first chunk.
func withRoom(n int) idList {
	return idList{chunks: [][]uint32{make([]uint32, 0, min(n, idChunk))}}
}
