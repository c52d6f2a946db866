package broker

import (
	"math"
	"slices"
	"testing"
)

// TestIDList: IDs read back in order across chunks, a cleared position
// reads 0, and every chunk after the first is made whole (no room but
// its own).
func TestIDList(t *testing.T) {
	for _, l := range []idList{{}, withRoom(3), withRoom(5 * idChunk)} {
		var want []JobID
		for i := range 3*idChunk + 5 {
			id := JobID(i*7 + 1)
			if i == idChunk {
				id = math.MaxUint32
			}
			l.push(id)
			want = append(want, id)
		}
		l.clear(1)
		want[1] = 0
		l.clear(2*idChunk + 3)
		want[2*idChunk+3] = 0
		if l.len() != len(want) || !slices.Equal(slices.Collect(l.all()), want) {
			t.Fatalf("list of %d IDs reads back wrong (want %d)", l.len(), len(want))
		}
		for i, id := range want {
			if l.at(i) != id {
				t.Fatalf("at(%d) = %d, want %d", i, l.at(i), id)
			}
		}
		if len(l.chunks) != 4 {
			t.Fatalf("%d chunks, want 4", len(l.chunks))
		}
		for k, c := range l.chunks[1:] {
			if cap(c) != idChunk {
				t.Fatalf("chunk %d has room for %d IDs, want %d", k+1, cap(c), idChunk)
			}
		}
	}
}
