package offheap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// TestStringsChurn puts, frees and reuses strings of every size class (the
// edges and long ones included) and URLs of a few origins (kept split,
// their origins shared and forgotten with their last URL) against a map,
// checking the slots as it goes and that every live string reads back as
// itself, copied, viewed, compared and by parts.
func TestStringsChurn(t *testing.T) {
	type owner struct{ s Strings }
	o := &owner{}
	mem := New(o)
	o.s.Init(mem)
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 7, 8, 9, 16, 17, 255, 256, 257, 1000}
	live := make(map[Ref]string)
	var scratch []byte
	split := 0
	for step := range 20000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			for r, v := range live {
				if got := o.s.View(r, &scratch); got != v {
					t.Fatalf("step %d: view %q, want %q", step, got, v)
				}
				o.s.Free(r)
				delete(live, r)
				break
			}
			continue
		}
		var v string
		if rng.IntN(2) == 0 {
			n := lengths[rng.IntN(len(lengths))]
			v = strings.Repeat(string(rune('a'+step%26)), n)
		} else {
			v = fmt.Sprintf("https://h%d.example.com", rng.IntN(5)) + "/" + strings.Repeat("p", rng.IntN(260))
		}
		r := o.s.Put(v)
		if v == "" {
			if r != (Ref{}) {
				t.Fatalf("empty string stored as %+v", r)
			}
			continue
		}
		if r.Len&Split != 0 && r.Len != Long {
			split++
		}
		if _, dup := live[r]; dup {
			t.Fatalf("step %d: ref %+v handed out twice", step, r)
		}
		live[r] = v
		if step%500 == 0 {
			refs := make([]Ref, 0, len(live))
			var prev Ref
			for r, v := range live {
				if got := o.s.String(r); got != v {
					t.Fatalf("step %d: %q, want %q", step, got, v)
				}
				if h, tl := o.s.Parts(r); h+tl != v || o.s.Len(r) != len(v) {
					t.Fatalf("step %d: parts %q %q, length %d, want %q", step, h, tl, o.s.Len(r), v)
				}
				if !o.s.HasPrefix(r, v[:len(v)/2]) || o.s.HasPrefix(r, v+"x") || o.s.ByteAt(r, len(v)-1) != v[len(v)-1] {
					t.Fatalf("step %d: prefix or byte of %q wrong", step, v)
				}
				if prev != (Ref{}) {
					if got, want := o.s.Compare(prev, r), strings.Compare(live[prev], v); got != want {
						t.Fatalf("step %d: compare %q with %q: %d, want %d", step, live[prev], v, got, want)
					}
				}
				prev = r
				refs = append(refs, r)
			}
			if err := o.s.Check(refs); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if split == 0 {
		t.Fatal("no URL was kept split")
	}
	for r := range live {
		o.s.Free(r)
	}
	if err := o.s.Check(nil); err != nil {
		t.Fatalf("all freed: %v", err)
	}
	if o.s.origins.ids.n != 0 {
		t.Fatalf("%d origins kept with no URL", o.s.origins.ids.n)
	}
	runtime.KeepAlive(o)
}

// TestStringsSplitURL: the first URL of an origin stays whole; the next
// ones give the origin a number and take the slot of the number and the
// rest; Check finds an origin counted wrong.
func TestStringsSplitURL(t *testing.T) {
	type owner struct{ s Strings }
	o := &owner{}
	o.s.Init(New(o))
	const u = "https://host-123.example.com/section/456/page-500000.html" // 57 bytes, origin 28
	first := o.s.Put(u)
	if first.Len != 57 || o.s.origins.ids.n != 0 {
		t.Fatalf("first URL of its origin: ref %+v with %d origins, want it whole and none", first, o.s.origins.ids.n)
	}
	a, b := o.s.Put(u), o.s.Put(u)
	if a.Len != Split|(originBytes+57-28) || b.Len != a.Len {
		t.Fatalf("refs %+v %+v, want split ones of %d bytes", a, b, originBytes+57-28)
	}
	if o.s.origins.ids.n != 1 || o.s.origins.users[1] != 2 {
		t.Fatalf("origins %+v, want one with two users", o.s.origins)
	}
	for _, v := range []string{"ftp://a/" + strings.Repeat("y", 40), "https://no-path.example.com"} {
		w := o.s.Put(v)
		if w.Len&Split != 0 {
			t.Fatalf("%q (origin under %d bytes, or none) was split: %+v", v, minOrigin, w)
		}
		o.s.Free(w)
	}
	if err := o.s.Check([]Ref{first, a, b}); err != nil {
		t.Fatal(err)
	}
	if err := o.s.Check([]Ref{first, a}); err == nil {
		t.Fatal("an origin counted with two users and named by one URL passed the check")
	}
	o.s.Free(a)
	o.s.Free(b)
	o.s.Free(first)
	if o.s.origins.ids.n != 0 {
		t.Fatal("the origin was kept after its last URL was freed")
	}
	runtime.KeepAlive(o)
}

// TestMemMapsPastTheHeapPart hands out more than the Go heap part and
// checks that the rest is mapped, zeroed, and that a released table is
// given back.
func TestMemMapsPastTheHeapPart(t *testing.T) {
	type owner struct{ int }
	o := &owner{}
	m := New(o)
	defer runtime.KeepAlive(o) // its memory is unmapped once o is unreachable
	for range heapFirst / (64 << 10) {
		m.Alloc(64 << 10)
	}
	if m.Mapped() != 0 {
		t.Fatalf("%d bytes mapped within the heap part", m.Mapped())
	}
	b := m.Alloc(1 << 10)
	if m.Mapped() < regionMin {
		t.Fatalf("%d bytes mapped past the heap part, want a region of %d", m.Mapped(), regionMin)
	}
	for _, x := range b {
		if x != 0 {
			t.Fatal("mapped memory not zeroed")
		}
	}
	before := m.Mapped()
	tb := m.Table(tableMin)
	if m.Mapped() != before+tableMin {
		t.Fatalf("table of %d: %d bytes mapped, want %d", tableMin, m.Mapped(), before+tableMin)
	}
	View[uint64](tb, tableMin/8)[tableMin/8-1] = 1
	m.Release(tb)
	if m.Mapped() != before {
		t.Fatalf("released table: %d bytes mapped, want %d", m.Mapped(), before)
	}
	bl := m.Block(100 << 10)
	if m.Mapped() != before+100<<10 {
		t.Fatalf("block of %d: %d bytes mapped, want %d", 100<<10, m.Mapped(), before+100<<10)
	}
	m.Release(bl)
	if m.Mapped() != before {
		t.Fatalf("released block: %d bytes mapped, want %d", m.Mapped(), before)
	}
}

// TestStringsCheckUnusedClass: Check finds a ref to a slot of a class
// that has handed out none.
func TestStringsCheckUnusedClass(t *testing.T) {
	type owner struct{ s Strings }
	o := &owner{}
	o.s.Init(New(o))
	if err := o.s.Check([]Ref{{Slot: 1, Len: 5}}); err == nil {
		t.Error("a ref to a slot of a class that handed out none passed the check")
	}
	runtime.KeepAlive(o)
}

// linked is a record with links to records of its own type.
type linked struct {
	link [2]struct{ prev, next *linked }
	n    uint32
}

// TestViewRefusesPointers: View panics on a type that holds a pointer
// other than to itself, at any depth, and takes a pointer-free one or one
// that links to records of its own type.
func TestViewRefusesPointers(t *testing.T) {
	b := make([]byte, 128)
	View[struct {
		a uint32
		b [2]struct{ c int16 }
	}](b, 2)
	View[linked](b, 2)
	for name, view := range map[string]func(){
		"pointer": func() { View[*int](b, 1) },
		"string in struct": func() {
			View[struct {
				a int32
				s string
			}](b, 1)
		},
		"slice in array":   func() { View[[1]struct{ s []byte }](b, 1) },
		"interface":        func() { View[any](b, 1) },
		"pointer to other": func() { View[struct{ l *linked }](b, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: View did not panic", name)
				}
			}()
			view()
		}()
	}
}

// TestOriginIndexChurn adds and removes tags (many sharing a home slot, so
// that runs wrap and deletions shift entries back) against a map, and
// checks every tag's number after each step.
func TestOriginIndexChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var x originIndex
	want := make(map[uint32]uint32)
	next := uint32(1)
	for step := range 20000 {
		tag := uint32(rng.IntN(300)) << 20 // a few home slots, runs across the end
		if rng.IntN(2) == 0 {
			tag |= 63 // the last slot of the smallest table
		}
		if n, ok := want[tag]; ok {
			if got := x.get(tag); got != n {
				t.Fatalf("step %d: tag %x: %d, want %d", step, tag, got, n)
			}
			x.del(tag)
			delete(want, tag)
		} else {
			x.put(tag, next)
			want[tag] = next
			next++
		}
		if x.n != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, x.n, len(want))
		}
		if step%97 == 0 {
			for tag, n := range want {
				if got := x.get(tag); got != n {
					t.Fatalf("step %d: tag %x: %d, want %d", step, tag, got, n)
				}
			}
		}
	}
	x.del(12345) // absent: nothing
	if x.n != len(want) {
		t.Fatal("deleting an absent tag changed the count")
	}
}
