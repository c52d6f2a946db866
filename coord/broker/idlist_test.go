package broker

import (
	"math"
	"slices"
	"testing"
)

// TestIDList: IDs read back in order, a cleared position reads 0, and an
// ID past 32 bits turns the list wide without losing the ones before.
func TestIDList(t *testing.T) {
	var l idList
	want := []JobID{1, 7, 3, math.MaxUint32}
	for _, id := range want {
		l.push(id)
	}
	if l.wide != nil || !slices.Equal(slices.Collect(l.all()), want) {
		t.Fatalf("narrow list %v (wide %v), want %v", slices.Collect(l.all()), l.wide != nil, want)
	}
	l.clear(1)
	want[1] = 0
	l.push(math.MaxUint32 + 1)
	want = append(want, math.MaxUint32+1)
	if l.wide == nil || l.len() != len(want) || !slices.Equal(slices.Collect(l.all()), want) {
		t.Fatalf("list %v (wide %v), want %v, wide", slices.Collect(l.all()), l.wide != nil, want)
	}
	l.clear(0)
	l.push(5)
	if l.at(0) != 0 || l.at(5) != 5 || l.at(4) != math.MaxUint32+1 {
		t.Fatalf("wide list %v after a clear and a push", slices.Collect(l.all()))
	}
}
