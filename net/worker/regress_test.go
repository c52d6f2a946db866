package worker

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"drover/admin"
	"drover/net/client"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// TestRequeueSendsCancel: PROTOCOL.md §6.13 — an operator who requeues a
// dispatched job takes it from its worker, which is told CANCEL: the job's
// context ends with ErrCancelled (its late RESULT is stale and ignored).
func TestRequeueSendsCancel(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	started := make(chan Job, 1)
	cause := make(chan error, 1)
	runWorker(t, s.PeersEndpoint(), Options{ID: "w"}, func(ctx context.Context, j Job) Result {
		started <- j
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return Internal(context.Cause(ctx))
	})
	totals(t, adm, "worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	ids := submit(t, p, wire.SubmitItem{Key: key("http://requeue.test/")})
	recvT(t, started, "job")
	if _, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActRequeue, Targets: []string{strconv.FormatUint(ids[0], 10)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("cause %v, want ErrCancelled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no CANCEL within 2s of requeueing the running job")
	}
}
