package worker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// wait bounds waits in these tests; they finish far sooner.
const wait = 10 * time.Second

func TestMain(m *testing.M) {
	switch os.Getenv(testsrv.HelperEnv) {
	case "worker":
		os.Exit(workerHelper())
	}
	os.Exit(m.Run())
}

// workerHelper is a worker process that prints each job it starts and
// holds it until killed.
func workerHelper() int {
	testsrv.ExitOnStdinEOF()
	err := Run(context.Background(), Options{Connect: os.Getenv("DROVER_TEST_CONNECT"), ID: "doomed"},
		func(ctx context.Context, j Job) Result {
			fmt.Printf("job %d %d\n", j.ID, j.Attempt)
			<-ctx.Done()
			return Internal(context.Cause(ctx))
		})
	fmt.Fprintln(os.Stderr, "helper:", err)
	return 1
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func key(u string) id.Key { return id.Key{Crawler: "c", Processor: "p", URL: u} }

// running is a worker started by runWorker.
type runningWorker struct {
	cancel context.CancelFunc
	done   chan error
}

// stop ends the worker and returns what Run returned.
func (w *runningWorker) stop(t testing.TB) error {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err
		return err
	case <-time.After(wait):
		t.Fatalf("worker did not stop within %v", wait)
		return nil
	}
}

// runWorker runs a worker against endpoint until the test ends.
func runWorker(t testing.TB, endpoint string, opts Options, h Handler) *runningWorker {
	t.Helper()
	opts.Connect = endpoint
	ctx, cancel := context.WithCancel(context.Background())
	w := &runningWorker{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- Run(ctx, opts, h) }()
	t.Cleanup(func() { w.stop(t) })
	return w
}

func dialProducer(t testing.TB, s *testsrv.Server) *client.Client {
	t.Helper()
	c, err := client.Dial(ctxT(t), client.Options{Connect: s.PeersEndpoint(), ID: "producer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialAdmin(t testing.TB, s *testsrv.Server, opts client.AdminOptions) *client.Admin {
	t.Helper()
	opts.Connect = s.AdminEndpoint()
	a, err := client.DialAdmin(ctxT(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// submit submits jobs with the given URLs and returns their job ids.
func submit(t *testing.T, p *client.Client, items ...wire.SubmitItem) []uint64 {
	t.Helper()
	st, err := p.Submit(ctxT(t), items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, len(st))
	for i, x := range st {
		if x.Status != wire.SubmitAccepted {
			t.Fatalf("submit %s: %+v, want accepted", items[i].Key.URL, x)
		}
		ids[i] = x.JobID
	}
	return ids
}

// totals waits until cond holds for the coordinator's totals.
func totals(t testing.TB, a *client.Admin, what string, cond func(admin.Totals) bool) admin.Totals {
	t.Helper()
	var last admin.Totals
	defer func() {
		if t.Failed() {
			t.Logf("last totals: %+v", last)
		}
	}()
	testsrv.Eventually(t, wait, what, func() bool {
		tot, err := a.Totals(ctxT(t))
		last = tot
		return err == nil && cond(tot)
	})
	return last
}

// jobRow returns the coordinator's row of the job whose URL is u (a
// free-text filter: job detail by id cannot be asked over the wire, whose
// QUERY key takes fingerprints only).
func jobRow(t *testing.T, a *client.Admin, u string) admin.JobRow {
	t.Helper()
	page, err := a.Query(ctxT(t), admin.Query{View: admin.ViewJobs, Limit: 10, Filter: u})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 1 || page.Jobs[0].URL != u {
		t.Fatalf("query of %s: rows %+v, want its one row", u, page.Jobs)
	}
	return page.Jobs[0]
}

func recvT[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
		panic("unreachable")
	}
}

// newScripted is a scripted coordinator for the test.
func newScripted(t *testing.T) *testsrv.Scripted { return testsrv.NewScripted(t) }

func expect[T wire.Message](t *testing.T, m wire.Message) T {
	t.Helper()
	return testsrv.Expect[T](t, m)
}

func jobItem(id uint64, u string) wire.JobItem {
	return wire.JobItem{JobID: id, Attempt: 1, Key: key(u)}
}
