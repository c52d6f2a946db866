package broker

import "unsafe"

// links are an element's place in one intrusive list: its neighbours.
type links[T any] struct{ prev, next *T }

// linkField names one links field of T. Its types are arrays of bytes as
// long as the field's offset in T (see stateLink): the list finds an
// element's links by adding that size to the element's address, a constant
// in the compiled code. A type parameter's method would be called through
// the generic code's dictionary (an indirect call per link, which the
// compiler cannot inline), whereas the size of a type argument is part of
// its GC shape: Go compiles the list once per shape, so each link field gets
// its own copy with the offset folded in. The method ties the type to T's
// field for the type checker and the reader; the list never calls it (the
// constants after the link types check that size and field agree).
type linkField[T any] interface {
	field(e *T) *links[T]
}

// list is an intrusive doubly linked FIFO of T through the links field that
// A names. An element is in at most one list per links field.
//
// Each method takes the field's offset once (off, a constant in the
// compiled code) and reaches links by adding it to an element's address;
// a helper for that step would take the generic code's dictionary as an
// argument and push remove and insertAfter over the inliner's budget, which
// the hand-written lists this replaced stayed under.
//
// Earlier versions kept one hand-written list per link field, because a
// list taking the accessor as a function value measured 5-10% slower. This
// one compiles to the same instructions as the hand-written ones (their
// remove and this one's, read side by side in the assembly, differ only in
// registers and field offsets; no dictionary call). Measured on 2026-12-02
// at load 15-40 on 2 cores:
//   - the list operations alone (outside the tree: 200,000 jobs on 1,000
//     hosts, each step taking the queue's head or a random job out of its
//     queue and lane and queuing it again, blocks of 20,000 steps on each
//     kind of list alternated in one process, timed by thread CPU time):
//     this list against the hand-written ones with the same field layout,
//     per-block ratio medians 1.00 to 1.015 in five runs; with the links
//     first in job (as now: one cache line) rather than after its counters
//     (where they were: bytes 112-143 of 192, two lines), 0.59 to 0.63 of
//     the time.
//   - the broker: the old and new test binaries run side by side ten times,
//     BenchmarkDispatchHostsRatio paired new/old medians 1.07 (1 host) and
//     1.06 (100,000 hosts), BenchmarkDispatch plain, headers and
//     plain+indexes 0.94, 1.11 and 1.02: within the run-to-run spread
//     (benchstat p 0.28 to 0.97), which the load makes ±20-100%.
type list[T any, A linkField[T]] struct {
	head, tail *T
	n          int
}

// push appends e.
func (l *list[T, A]) push(e *T) {
	off := unsafe.Sizeof(*new(A))
	k := (*links[T])(unsafe.Add(unsafe.Pointer(e), off))
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		(*links[T])(unsafe.Add(unsafe.Pointer(l.tail), off)).next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

// insertAfter puts e after the element after, or first when after is nil.
func (l *list[T, A]) insertAfter(after, e *T) {
	off := unsafe.Sizeof(*new(A))
	k := (*links[T])(unsafe.Add(unsafe.Pointer(e), off))
	link := &l.head // what points to e once it is in
	if after != nil {
		link = &(*links[T])(unsafe.Add(unsafe.Pointer(after), off)).next
	}
	k.prev, k.next = after, *link
	*link = e
	if k.next != nil {
		(*links[T])(unsafe.Add(unsafe.Pointer(k.next), off)).prev = e
	} else {
		l.tail = e
	}
	l.n++
}

// remove takes e out of the list.
func (l *list[T, A]) remove(e *T) {
	off := unsafe.Sizeof(*new(A))
	k := (*links[T])(unsafe.Add(unsafe.Pointer(e), off))
	if k.prev != nil {
		(*links[T])(unsafe.Add(unsafe.Pointer(k.prev), off)).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		(*links[T])(unsafe.Add(unsafe.Pointer(k.next), off)).prev = k.prev
	} else {
		l.tail = k.prev
	}
	*k = links[T]{}
	l.n--
}

// The link fields. Each type's size is its field's offset (linkField):
// each field comes first in its type, as the offsets cannot be taken from
// the types themselves, whose layout depends on the lists (a cycle); the
// constants below check them.

// ringLink names lane.link: a lane's place in its class's ring.
type ringLink [0]byte

func (ringLink) field(l *lane) *links[lane] { return &l.link }

// readyLink names worker.link: a worker's place in the ready list.
type readyLink [0]byte

func (readyLink) field(w *worker) *links[worker] { return &w.link }

// jlinks are a job record's place in one list of jobs: its neighbours' IDs,
// 0 for none. Four bytes a neighbour where a pointer takes eight (issue
// 21: the two lists of every queued job cost 16 bytes of its record less);
// a neighbour is found through the job store (jobStore.at), a shift and
// two loads more than a pointer.
type jlinks struct{ prev, next uint32 }

// jobLinkField names one jlinks field of job, as linkField does for
// links: the type's size is the field's offset.
type jobLinkField interface {
	field(j *job) *jlinks
}

// jlist is an intrusive doubly linked FIFO of jobs through the jlinks field
// that A names, linked by job ID. An element is in at most one list per
// field. remove and next take the job store the IDs are in.
type jlist[A jobLinkField] struct {
	head, tail *job
	n          int
}

// jl returns e's links of field A.
func jl[A jobLinkField](e *job) *jlinks {
	return (*jlinks)(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(*new(A))))
}

// push appends e.
func (l *jlist[A]) push(e *job) {
	k := jl[A](e)
	k.prev, k.next = 0, 0
	if l.tail != nil {
		k.prev = uint32(l.tail.id)
		jl[A](l.tail).next = uint32(e.id)
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

// remove takes e out of the list.
func (l *jlist[A]) remove(js *jobStore, e *job) {
	k := jl[A](e)
	prev, next := js.ptr(k.prev), js.ptr(k.next)
	if prev != nil {
		jl[A](prev).next = k.next
	} else {
		l.head = next
	}
	if next != nil {
		jl[A](next).prev = k.prev
	} else {
		l.tail = prev
	}
	*k = jlinks{}
	l.n--
}

// next is the job after e in the list, nil at its end.
func (l *jlist[A]) next(js *jobStore, e *job) *job { return js.ptr(jl[A](e).next) }

// stateLink names job.link: the one list a job's state puts it in.
type stateLink [0]byte

func (stateLink) field(j *job) *jlinks { return &j.link }

// hostLink names job.hlink: a queued job's place in its lane.
type hostLink [unsafe.Sizeof(jlinks{})]byte

func (hostLink) field(j *job) *jlinks { return &j.hlink }

// These fail to compile unless each link type's size is its
// field's offset: a uintptr constant cannot be negative, so each pair of
// differences is zero.
const (
	_ = unsafe.Offsetof(job{}.link) - unsafe.Sizeof(stateLink{})
	_ = unsafe.Sizeof(stateLink{}) - unsafe.Offsetof(job{}.link)
	_ = unsafe.Offsetof(job{}.hlink) - unsafe.Sizeof(hostLink{})
	_ = unsafe.Sizeof(hostLink{}) - unsafe.Offsetof(job{}.hlink)
	_ = unsafe.Offsetof(lane{}.link) - unsafe.Sizeof(ringLink{})
	_ = unsafe.Sizeof(ringLink{}) - unsafe.Offsetof(lane{}.link)
	_ = unsafe.Offsetof(worker{}.link) - unsafe.Sizeof(readyLink{})
	_ = unsafe.Sizeof(readyLink{}) - unsafe.Offsetof(worker{}.link)
)

// jobList is a FIFO of jobs through job.link.
type jobList = jlist[stateLink]

// hostList is a FIFO of jobs through job.hlink.
type hostList = jlist[hostLink]
