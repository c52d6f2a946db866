package broker

import (
	"testing"
	"unsafe"
)

// TestSideTable: numbers start at 1, 0 reads as none, a freed number is
// reused and its value let go.
func TestSideTable(t *testing.T) {
	var st sideTable[[]byte]
	if v := st.at(0); v != nil {
		t.Fatalf("at(0) = %q, want nil", v)
	}
	a, b := st.add([]byte("a")), st.add([]byte("b"))
	if a != 1 || b != 2 || string(st.at(a)) != "a" || string(st.at(b)) != "b" {
		t.Fatalf("numbers %d %d holding %q %q", a, b, st.at(a), st.at(b))
	}
	st.del(&a)
	if a != 0 || st.v[1] != nil {
		t.Fatalf("after del: number %d, slot %q, want 0 and nil", a, st.v[1])
	}
	var none uint32
	st.del(&none) // nothing
	if c := st.add([]byte("c")); c != 1 || string(st.at(c)) != "c" {
		t.Fatalf("reused number %d holding %q, want 1 holding c", c, st.at(c))
	}
	if len(st.free) != 0 || st.v[0] != nil {
		t.Fatalf("free %v, slot 0 %q", st.free, st.v[0])
	}
}

// TestJobRecordSize: a job record is 96 bytes (issue 21: what a queued
// job costs); a field added to it belongs in jobMore unless every queued
// job needs it.
func TestJobRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(job{}); n != 96 {
		t.Fatalf("job record of %d bytes, want 96", n)
	}
}
