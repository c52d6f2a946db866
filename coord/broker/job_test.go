package broker

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"drover/coord/id"
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

// TestJobRecordSize: a job record is 88 bytes (issue 21: what a queued
// job costs); a field added to it belongs in jobMore unless every queued
// job needs it.
func TestJobRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(job{}); n != 88 {
		t.Fatalf("job record of %d bytes, want 88", n)
	}
}

// TestJobIDsExhausted: once every job ID up to Config.LastJobID is given,
// CheckIDs says so with ErrJobIDsExhausted and Submit takes nothing more
// (it returns 0 and counts the refusal); the jobs it has stay as they
// are. A LastJobID past 2^32-1 is refused.
func TestJobIDsExhausted(t *testing.T) {
	if _, err := New(Config{LastJobID: maxJobID + 1}); err == nil {
		t.Fatal("New took LastJobID 2^32: want an error naming it")
	}
	b, err := New(Config{LastJobID: 3})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	spec := func(i int) Spec {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h.test/%d", i)}
		return Spec{Key: k, FP: k.Fingerprint(), Host: "h.test"}
	}
	for i := 1; i <= 3; i++ {
		if left := b.IDsLeft(); left != 4-i {
			t.Fatalf("before job %d: %d IDs left, want %d", i, left, 4-i)
		}
		if err := b.CheckIDs(); err != nil {
			t.Fatalf("before job %d: %v", i, err)
		}
		if j := b.Submit(now, spec(i)); j != JobID(i) {
			t.Fatalf("job %d got ID %d", i, j)
		}
	}
	err = b.CheckIDs()
	if !errors.Is(err, ErrJobIDsExhausted) || b.IDsLeft() != 0 {
		t.Fatalf("after the last ID: CheckIDs %v, %d left; want ErrJobIDsExhausted, 0", err, b.IDsLeft())
	}
	if j := b.Submit(now, spec(4)); j != 0 {
		t.Fatalf("Submit past the last ID gave job %d, want 0", j)
	}
	if b.IDRefusals() != 1 || b.Submitted() != 3 || b.Count(Queued) != 3 {
		t.Fatalf("refusals %d, submitted %d, queued %d; want 1, 3, 3", b.IDRefusals(), b.Submitted(), b.Count(Queued))
	}
	if _, ok := b.JobOfKey(spec(4).FP); ok {
		t.Fatal("the refused job's key names a job")
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestQueueOrderRenumbered: a job's place in the order across class
// queues is a 32-bit number; when the numbers run out, the queued jobs are
// numbered again from 1 in their order, and dispatch stays first in,
// first out across the classes.
func TestQueueOrderRenumbered(t *testing.T) {
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.seq = math.MaxUint32 - 2
	now := time.Unix(1_700_000_000, 0)
	classes := []map[string]string{nil, {"gpu": "yes"}}
	for i := range 6 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h.test/%d", i)}
		b.Submit(now, Spec{Key: k, FP: k.Fingerprint(), Host: "h.test", Headers: classes[i%2]})
		if err := checkInvariants(b); err != nil {
			t.Fatalf("after job %d: %v", i+1, err)
		}
	}
	if b.seq != 6 {
		t.Fatalf("last number given %d, want 6 (the two queued renumbered 1, 2 at the third job)", b.seq)
	}
	if err := b.Register(now, 1, WorkerInfo{ID: "w", Slots: 6, Headers: map[string]string{"gpu": "yes"}}, nil); err != nil {
		t.Fatal(err)
	}
	as := b.Dispatch(now, nil)
	if len(as) != 6 {
		t.Fatalf("dispatched %d jobs, want 6", len(as))
	}
	for i, a := range as {
		if a.Job != JobID(i+1) {
			t.Fatalf("dispatch %d took job %d, want %d (first in, first out)", i, a.Job, i+1)
		}
	}
}
