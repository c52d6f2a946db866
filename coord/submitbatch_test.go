package coord

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// backendOnly hides the in-memory ledger's extras: a ledger.Backend as
// one kept elsewhere would be.
type backendOnly struct{ ledger.Backend }

// memQueue is a SharedQueue in memory.
type memQueue struct {
	jobs   []broker.Spec
	nextID uint64
}

func (q *memQueue) Push(now time.Time, sp broker.Spec) (uint64, error) {
	q.nextID++
	q.jobs = append(q.jobs, sp)
	return q.nextID, nil
}

func (q *memQueue) PushBatch(now time.Time, sps []broker.Spec) ([]uint64, error) {
	ids := make([]uint64, len(sps))
	for i, sp := range sps {
		ids[i], _ = q.Push(now, sp)
	}
	return ids, nil
}

func (q *memQueue) Claim(now time.Time, n int) ([]broker.Spec, error) {
	n = min(n, len(q.jobs))
	out := q.jobs[:n:n]
	q.jobs = q.jobs[n:]
	return out, nil
}

func (q *memQueue) Finish(time.Time, []ledger.Item, []ledger.Item) {}

// A SUBMIT taken to a ledger backend as batches answers as one job at a
// time does: accepted, duplicates (also of a key listed twice), waits on a
// key another session holds, bad keys, in order; the same jobs are queued.
func TestSubmitBatchAnswersAsOneByOne(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	one := newCoord(t, Config{})
	batch := newCoord(t, Config{Backend: backendOnly{mem}})
	shared := &memQueue{}
	mem2, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sharedC := newCoord(t, Config{Backend: backendOnly{mem2}, Shared: shared})
	cs := []*Coordinator{one, batch, sharedC}
	for _, c := range cs {
		hello(t, c, 1, Hello{Role: RoleProducer, ID: "holder"})
		hello(t, c, 2, Hello{Role: RoleProducer, ID: "submitter"})
		if vs, _ := c.Request(t0, 1, 1, []id.Key{specs("http://held.test/")[0].Key}, nil); vs[0].Verdict != ledger.OK {
			t.Fatalf("request: %+v", vs)
		}
	}
	var urls []string
	for i := range 20 {
		urls = append(urls, fmt.Sprintf("http://h%d.test/%d", i%3, i))
	}
	msgs := [][]string{
		urls[:10],
		append(append([]string{}, urls[5:15]...), "http://h1.test/1", "ftp://bad", "http://held.test/", urls[12]),
		{urls[19], urls[19], "http://%zz/"},
	}
	for m, msg := range msgs {
		var got [][]SubmitVerdict
		for _, c := range cs {
			vs, err := c.Submit(t0, 2, uint64(m+1), specs(msg...), nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, vs)
		}
		for i := range got[0] {
			a, b, s := got[0][i], got[1][i], got[2][i]
			b.Detail, a.Detail, s.Detail = "", "", ""
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("message %d job %d (%s): batched %+v; one by one %+v", m, i, msg[i], b, a)
			}
			s.Job, a.Job = 0, 0 // the shared queue's ids
			if !reflect.DeepEqual(a, s) {
				t.Fatalf("message %d job %d (%s): with a shared queue %+v; one by one %+v", m, i, msg[i], s, a)
			}
		}
	}
	if q1, qb := one.brk.Count(broker.Queued), batch.brk.Count(broker.Queued); q1 != qb || q1 != 16 || len(shared.jobs) != 16 {
		t.Fatalf("queued %d one by one, %d batched, %d pushed; want 16 each (urls 0 to 14 and 19)", q1, qb, len(shared.jobs))
	}
}

// A batch SUBMIT on a ledger kept elsewhere, with fewer job IDs left than
// jobs and no shared queue to take them, refuses the jobs past the last
// ID rather than answering them accepted with no job (their keys would be
// queued in the ledger and lost).
func TestSubmitBatchPastLastJobID(t *testing.T) {
	mem, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := newCoord(t, Config{Backend: backendOnly{mem}, Broker: broker.Config{LastJobID: 2}})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	vs, err := c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2", "http://a.test/3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []SubmitStatus{Accepted, Accepted, Rejected}
	for i, v := range vs {
		if v.Status != want[i] || (v.Status == Accepted) != (v.Job != 0) {
			t.Errorf("job %d: %v job %d (%s), want %v", i, v.Status, v.Job, v.Reason, want[i])
		}
	}
	if vs[2].Reason != ReasonJobIDs {
		t.Errorf("refusal reason %q, want %q", vs[2].Reason, ReasonJobIDs)
	}
}
