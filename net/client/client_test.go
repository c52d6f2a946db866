package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/coord/id"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// wait bounds waits in these tests; they finish far sooner.
const wait = 10 * time.Second

func TestMain(m *testing.M) {
	switch os.Getenv(testsrv.HelperEnv) {
	case "producer":
		os.Exit(producerHelper())
	}
	os.Exit(m.Run())
}

// producerHelper is the first requester of seed 000: it requests the key,
// prints its verdict, and blocks until it is killed.
func producerHelper() int {
	testsrv.ExitOnStdinEOF()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := Dial(ctx, Options{Connect: os.Getenv("DROVER_TEST_CONNECT"), ID: "seed000-first"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	vs, err := c.Request(ctx, []id.Key{seedKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Printf("verdict %s %s\n", vs[0].Verdict, vs[0].Reason)
	select {} // hold the key until killed
}

var seedKey = id.Key{Crawler: "seed", Processor: "html", URL: "http://example.test/x"}

func dial(t *testing.T, s *testsrv.Server, opts Options) *Client {
	t.Helper()
	opts.Connect = s.PeersEndpoint()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := Dial(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialAdmin(t *testing.T, endpoint string, opts AdminOptions) *Admin {
	t.Helper()
	opts.Connect = endpoint
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := DialAdmin(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func key(u string) id.Key { return id.Key{Crawler: "c", Processor: "p", URL: u} }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

type verdictResult struct {
	vs  []Verdict
	err error
}

// TestSeed000AcrossProcesses is seed 000's scenario with three real
// connections: the first requester is a child process killed with
// SIGKILL; the second, waiting, gets ok (handover) once the coordinator
// notices the silence (when is the coordinator's tests' business, on their
// fake clock; here the time is logged, never judged); the third gets no
// once the second queued it.
func TestSeed000AcrossProcesses(t *testing.T) {
	const beat = time.Second // a child busy on a loaded machine must not miss its liveness (3 s)
	s := testsrv.Start(t, testsrv.Options{Heartbeat: beat})
	first := testsrv.StartChild(t, "producer", "DROVER_TEST_CONNECT="+s.PeersEndpoint())
	if v := first.Line(t, "verdict", wait); v != "ok" {
		t.Fatalf("first requester: verdict %q, want ok", v)
	}
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{ReadOnly: true})
	second := dial(t, s, Options{ID: "seed000-second"})
	got := make(chan verdictResult, 1)
	go func() {
		vs, err := second.Request(context.Background(), []id.Key{seedKey})
		got <- verdictResult{vs, err}
	}()
	testsrv.Eventually(t, wait, "second requester waiting", func() bool {
		tot, err := adm.Totals(ctxT(t))
		return err == nil && tot.Waiters == 1
	})
	select {
	case r := <-got:
		t.Fatalf("second requester answered %+v, %v while the first lives, want it to wait", r.vs, r.err)
	default:
	}

	killed := first.Kill(t)
	var r verdictResult
	select {
	case r = <-got:
	case <-time.After(wait):
		t.Fatalf("second requester got no answer within %v of the kill", wait)
	}
	took := time.Since(killed)
	if r.err != nil || r.vs[0].Verdict != wire.VerdictOK || r.vs[0].Reason != "handover" {
		t.Fatalf("second requester: %+v, %v; want ok (handover)", r.vs, r.err)
	}
	t.Logf("kill to handover: %v (heartbeat × liveness + one interval = %v)", took, beat*3+beat)

	if vs, err := second.Queue(ctxT(t), []id.Key{seedKey}); err != nil || vs[0].Verdict != wire.VerdictOK {
		t.Fatalf("second queues: %+v, %v; want ok", vs, err)
	}
	third := dial(t, s, Options{ID: "seed000-third"})
	vs, err := third.Request(ctxT(t), []id.Key{seedKey})
	if err != nil || vs[0].Verdict != wire.VerdictNo || vs[0].Reason != "queued" {
		t.Fatalf("third requester: %+v, %v; want no (queued)", vs, err)
	}
}

// TestLedgerVerdicts walks request, queue and done through the wire.
func TestLedgerVerdicts(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	a := dial(t, s, Options{ID: "a"})
	b := dial(t, s, Options{ID: "b"})
	ctx := ctxT(t)
	k1, k2 := key("http://l.test/1"), key("http://l.test/2")
	steps := []struct {
		name    string
		do      func() ([]Verdict, error)
		verdict wire.Verdict
		reason  string
	}{
		{"a requests k1", func() ([]Verdict, error) { return a.Request(ctx, []id.Key{k1}) }, wire.VerdictOK, ""},
		// PROTOCOL.md §6.6 gives this the reason "owner"; the ledger gives
		// none (reported to the lead), so only the verdict is checked.
		{"a requests k1 again", func() ([]Verdict, error) { return a.Request(ctx, []id.Key{k1}) }, wire.VerdictOK, ""},
		{"b queues k1 it does not own", func() ([]Verdict, error) { return b.Queue(ctx, []id.Key{k1}) }, wire.VerdictError, "not-owner"},
		{"a queues k1", func() ([]Verdict, error) { return a.Queue(ctx, []id.Key{k1}) }, wire.VerdictOK, ""},
		{"b requests queued k1", func() ([]Verdict, error) { return b.Request(ctx, []id.Key{k1}) }, wire.VerdictNo, "queued"},
		{"b marks k2 done", func() ([]Verdict, error) {
			return b.Done(ctx, []wire.DoneItem{{Key: k2, Outcome: wire.DoneOK}})
		}, wire.VerdictOK, ""},
		{"a requests done k2", func() ([]Verdict, error) { return a.Request(ctx, []id.Key{k2}) }, wire.VerdictNo, "done"},
	}
	for _, st := range steps {
		vs, err := st.do()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(vs) != 1 || vs[0].Verdict != st.verdict || !strings.HasPrefix(vs[0].Reason, st.reason) {
			t.Fatalf("%s: %+v, want %s (%s)", st.name, vs, st.verdict, st.reason)
		}
		if vs[0].Fingerprint == (id.Fingerprint{}) {
			t.Fatalf("%s: zero fingerprint", st.name)
		}
	}
}

// TestWaitResolvedByQueue: a waiting request is answered no when the owner
// queues the key, and the ANSWER fills the right position of a batch.
func TestWaitResolvedByQueue(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	a := dial(t, s, Options{ID: "a"})
	b := dial(t, s, Options{ID: "b"})
	ctx := ctxT(t)
	held, free := key("http://w.test/held"), key("http://w.test/free")
	if _, err := a.Request(ctx, []id.Key{held}); err != nil {
		t.Fatal(err)
	}
	got := make(chan verdictResult, 1)
	go func() {
		vs, err := b.Request(ctx, []id.Key{free, held})
		got <- verdictResult{vs, err}
	}()
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
	testsrv.Eventually(t, wait, "b waiting", func() bool {
		tot, err := adm.Totals(ctx)
		return err == nil && tot.Waiters == 1
	})
	if _, err := a.Queue(ctx, []id.Key{held}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.vs[0].Verdict != wire.VerdictOK || r.vs[1].Verdict != wire.VerdictNo || r.vs[1].Reason != "queued" {
		t.Fatalf("verdicts %+v: want ok for the free key, no (queued) for the held one", r.vs)
	}
}

// TestBatchesSplitAndPipelined: inputs over wire.MaxBatch are split, and
// the verdicts come back in input order.
func TestBatchesSplitAndPipelined(t *testing.T) {
	// A 10,000-key REQUEST keeps a race-enabled server on a loaded machine
	// busy for seconds, without heartbeats: use a heartbeat that outlasts
	// it, or the session is lost and the batch re-sent.
	s := testsrv.Start(t, testsrv.Options{Heartbeat: 5 * time.Second})
	c := dial(t, s, Options{Timeout: 30 * time.Second})
	// The whole call may take several of those per-reply timeouts.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 2*wire.MaxBatch + 17
	keys := make([]id.Key, n)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("http://b.test/%d", i))
	}
	keys[n-1] = keys[0] // requested twice in one call: ok both times (idempotent)
	vs, err := c.Request(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != n {
		t.Fatalf("%d verdicts, want %d", len(vs), n)
	}
	for i := range n - 1 {
		if vs[i].Verdict != wire.VerdictOK || vs[i].Fingerprint != keys[i].Fingerprint() {
			t.Fatalf("verdict %d: %+v, want ok for %s", i, vs[i], keys[i].URL)
		}
	}
	if vs[n-1].Verdict != wire.VerdictOK || vs[n-1].Fingerprint != keys[0].Fingerprint() {
		t.Fatalf("last verdict %+v, want ok for the key requested first", vs[n-1])
	}
	subs := make([]wire.SubmitItem, wire.MaxBatch+5)
	for i := range subs {
		subs[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://s.test/%d", i)), Payload: []byte("x")}
	}
	st, err := c.Submit(ctx, subs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make(map[uint64]bool)
	for i, x := range st {
		if x.Status != wire.SubmitAccepted || x.JobID == 0 || ids[x.JobID] {
			t.Fatalf("submit %d: %+v, want accepted with a new job id", i, x)
		}
		ids[x.JobID] = true
	}
	again, err := c.Submit(ctx, subs[:3])
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range again {
		// PROTOCOL.md §6.11 wants the existing job's id here; the
		// coordinator sends 0 (reported to the lead), so 0 is let through.
		if x.Status != wire.SubmitDuplicate || (x.JobID != 0 && x.JobID != st[i].JobID) || x.Reason != "queued" {
			t.Fatalf("resubmit %d: %+v, want duplicate (queued) of job %d", i, x, st[i].JobID)
		}
	}
}

// TestSubmitWaitsForHeldKey: a SUBMIT on a key another session holds in
// requested waits, then ends accepted when the holder goes away (the key
// is handed over and the job enqueued) or duplicate when it queues it.
func TestSubmitWaitsForHeldKey(t *testing.T) {
	cases := []struct {
		name   string
		holder func(ctx context.Context, h *Client, k id.Key) error
		want   wire.SubmitStatus
	}{
		{"holder closes", func(_ context.Context, h *Client, _ id.Key) error { return h.Close() }, wire.SubmitAccepted},
		{"holder queues", func(ctx context.Context, h *Client, k id.Key) error {
			_, err := h.Queue(ctx, []id.Key{k})
			return err
		}, wire.SubmitDuplicate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testsrv.Start(t, testsrv.Options{})
			holder := dial(t, s, Options{ID: "holder"})
			sub := dial(t, s, Options{ID: "submitter"})
			adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
			ctx := ctxT(t)
			k := key("http://h.test/held")
			if _, err := holder.Request(ctx, []id.Key{k}); err != nil {
				t.Fatal(err)
			}
			type res struct {
				st  []Submitted
				err error
			}
			got := make(chan res, 1)
			go func() {
				st, err := sub.Submit(ctx, []wire.SubmitItem{{Key: key("http://h.test/free")}, {Key: k}})
				got <- res{st, err}
			}()
			testsrv.Eventually(t, wait, "submit waiting", func() bool {
				tot, err := adm.Totals(ctx)
				return err == nil && tot.Waiters == 1
			})
			if err := tc.holder(ctx, holder, k); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.st[0].Status != wire.SubmitAccepted || r.st[1].Status != tc.want {
				t.Fatalf("statuses %+v: want accepted, then %s for the held key", r.st, tc.want)
			}
			if tc.want == wire.SubmitAccepted && r.st[1].JobID == 0 {
				t.Fatalf("held key accepted without a job id: %+v", r.st[1])
			}
		})
	}
}

// TestCoordinatorGone: when the coordinator goes away, a caller waiting
// for an ANSWER gets ErrSessionLost. (That a new call then gets ErrTimeout
// is TestTimeoutOnTheFakeClock's: a 300 ms Timeout here could also run out
// on a loaded machine before the first VERDICTS came.)
func TestCoordinatorGone(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	a := dial(t, s, Options{ID: "a"})
	b := dial(t, s, Options{ID: "b", ReconnectMin: 50 * time.Millisecond})
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
	ctx := ctxT(t)
	k := key("http://g.test/x")
	if _, err := a.Request(ctx, []id.Key{k}); err != nil {
		t.Fatal(err)
	}
	got := make(chan verdictResult, 1)
	go func() {
		vs, err := b.Request(ctx, []id.Key{k})
		got <- verdictResult{vs, err}
	}()
	testsrv.Eventually(t, wait, "b waiting", func() bool {
		tot, err := adm.Totals(ctx)
		return err == nil && tot.Waiters == 1
	})
	s.Stop()
	r := <-got
	if !errors.Is(r.err, ErrSessionLost) {
		t.Fatalf("waiting request: %+v, %v; want ErrSessionLost", r.vs, r.err)
	}
}

// TestConcurrentCallers: several goroutines share one client; every one
// gets the verdicts of its own keys.
func TestConcurrentCallers(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	c := dial(t, s, Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := key(fmt.Sprintf("http://cc.test/%d/%d", g, i))
				vs, err := c.Request(ctx, []id.Key{k})
				if err != nil {
					errs <- err
					return
				}
				if vs[0].Fingerprint != k.Fingerprint() || vs[0].Verdict != wire.VerdictOK {
					errs <- fmt.Errorf("goroutine %d key %d: %+v, want ok for its own key", g, i, vs[0])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCloseFailsWaitingCall: Close ends a call waiting for an ANSWER with
// ErrClosed, and later calls fail the same way.
func TestCloseFailsWaitingCall(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	a := dial(t, s, Options{ID: "a"})
	b := dial(t, s, Options{ID: "b"})
	ctx := ctxT(t)
	k := key("http://close.test/x")
	if _, err := a.Request(ctx, []id.Key{k}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Request(ctx, []id.Key{k})
		got <- err
	}()
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
	testsrv.Eventually(t, wait, "b waiting", func() bool {
		tot, err := adm.Totals(ctx)
		return err == nil && tot.Waiters == 1
	})
	b.Close()
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiting request after Close: %v, want ErrClosed", err)
	}
	if _, err := b.Request(ctx, []id.Key{k}); !errors.Is(err, ErrClosed) {
		t.Fatalf("request after Close: %v, want ErrClosed", err)
	}
}

// TestContextEndsWait: the caller's context bounds a wait for an ANSWER.
func TestContextEndsWait(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	a := dial(t, s, Options{ID: "a"})
	b := dial(t, s, Options{ID: "b"})
	k := key("http://ctx.test/x")
	if _, err := a.Request(ctxT(t), []id.Key{k}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := b.Request(ctx, []id.Key{k})
		got <- err
	}()
	stop := errors.New("caller gave up")
	cancel(stop)
	if err := <-got; !errors.Is(err, stop) {
		t.Fatalf("request after its context ended: %v, want the context's cause", err)
	}
}

func TestDialErrors(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	t.Run("producer on the admin socket", func(t *testing.T) {
		_, err := Dial(ctxT(t), Options{Connect: s.AdminEndpoint()})
		if !wire.IsCode(err, wire.CodeForbidden) {
			t.Fatalf("dial: %v, want ERROR 403 at once", err)
		}
	})
	t.Run("nobody listening", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := Dial(ctx, Options{Connect: "tcp://127.0.0.1:1", ReconnectMin: 50 * time.Millisecond})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial: %v, want the context's deadline", err)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		cases := []struct {
			opts Options
			want string
		}{
			{Options{Connect: s.PeersEndpoint(), Timeout: -1}, "Timeout"},
			{Options{Connect: s.PeersEndpoint(), Heartbeat: -1}, "Heartbeat"},
			{Options{Connect: s.PeersEndpoint(), ReconnectMin: time.Second, ReconnectMax: time.Millisecond}, "ReconnectMin"},
			{Options{Connect: s.PeersEndpoint(), ID: strings.Repeat("x", wire.MaxID+1)}, "id"},
			{Options{Connect: s.PeersEndpoint(), ID: "bad\nid"}, "id"},
		}
		for _, tc := range cases {
			_, err := Dial(ctxT(t), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial(%+v): %v, want an error naming %s", tc.opts, err, tc.want)
			}
		}
	})
}

func TestSpans(t *testing.T) {
	one := func(int) int { return 1 }
	cases := []struct {
		name          string
		n, count, max int
		size          func(int) int
		want          []span
	}{
		{"empty", 0, 10, 100, one, nil},
		{"one span", 5, 10, 100, one, []span{{0, 5}}},
		{"by count", 5, 2, 100, one, []span{{0, 2}, {2, 4}, {4, 5}}},
		{"by bytes", 5, 10, 3, one, []span{{0, 3}, {3, 5}}},
		{"oversized item alone", 3, 10, 5, func(i int) int { return []int{1, 9, 1}[i] }, []span{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, tc := range cases {
		got := spans(tc.n, tc.count, tc.max, tc.size)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func keysOf(ks ...id.Key) []id.Key { return ks }
