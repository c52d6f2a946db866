package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
	"drover/net/worker"
)

// queueResult is one side's figures for one round of the queue benchmark.
type queueResult struct {
	enqueue time.Duration // putting the jobs in the queue, no worker running
	drain   time.Duration // from starting the workers to the last job done
	jobs    int
}

func (q queueResult) enqueueRate() float64 { return float64(q.jobs) / q.enqueue.Seconds() }
func (q queueResult) drainRate() float64   { return float64(q.jobs) / q.drain.Seconds() }

// droverQueue submits jobs no-op jobs with one producer session (the
// client batches and pipelines them, as `drover submit -` does), then
// starts workers Go workers of slots slots each and times them until the
// coordinator counts every job done.
func droverQueue(ctx context.Context, s *droverServer, round, jobs, workers, slots int) (queueResult, error) {
	return droverQueueWith(ctx, s, round, jobs, workers, slots, nil)
}

// droverQueueWith is droverQueue calling submitted, when set, once the
// jobs are in and before the workers start.
func droverQueueWith(ctx context.Context, s *droverServer, round, jobs, workers, slots int, submitted func()) (queueResult, error) {
	p, err := client.Dial(ctx, client.Options{Connect: s.peers, ID: fmt.Sprintf("bench-queue-%d", round), Timeout: time.Minute})
	if err != nil {
		return queueResult{}, err
	}
	defer p.Close()
	adm, err := client.DialAdmin(ctx, client.AdminOptions{Connect: s.admin})
	if err != nil {
		return queueResult{}, err
	}
	defer adm.Close()
	base, err := adm.Totals(ctx)
	if err != nil {
		return queueResult{}, err
	}
	items := make([]wire.SubmitItem, jobs)
	for i := range items {
		items[i] = wire.SubmitItem{Key: id.Key{Crawler: "bench", Processor: "noop", URL: fmt.Sprintf("https://queue.example.com/%d/%d", round, i)}}
	}
	res := queueResult{jobs: jobs}
	began := time.Now()
	st, err := p.Submit(ctx, items)
	if err != nil {
		return res, err
	}
	res.enqueue = time.Since(began)
	for i, x := range st {
		if x.Status != wire.SubmitAccepted {
			return res, fmt.Errorf("drover job %d: %+v, want accepted", i, x)
		}
	}
	if submitted != nil {
		submitted()
	}
	var handled atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	began = time.Now()
	for w := range workers {
		wg.Go(func() {
			_ = worker.Run(wctx, worker.Options{Connect: s.peers, ID: fmt.Sprintf("bench-noop-%d-%d", round, w), Slots: slots},
				func(context.Context, worker.Job) worker.Result {
					handled.Add(1)
					return worker.Result{}
				})
		})
	}
	want := base.Done + jobs
	for {
		t, err := adm.Totals(ctx)
		if err != nil {
			return res, err
		}
		if t.Done >= want {
			break
		}
		if t.Failed > base.Failed {
			return res, fmt.Errorf("drover: %d jobs failed", t.Failed-base.Failed)
		}
		if err := pause(ctx, 2*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.drain = time.Since(began)
	return res, nil
}

// asynqQueue enqueues jobs no-op tasks (from 16 goroutines: asynq's
// client sends one task per round trip), then starts workers asynq
// servers of concurrency slots each, TaskCheckInterval 1 ms (default 1 s),
// and times them until their handlers have run every task and Redis's
// queue is empty.
func asynqQueue(ctx context.Context, addr string, round, jobs, workers, slots int) (queueResult, error) {
	opt := asynq.RedisClientOpt{Addr: addr}
	c := asynq.NewClient(opt)
	defer c.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	res := queueResult{jobs: jobs}
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	began := time.Now()
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(jobs) {
					return
				}
				if _, err := c.EnqueueContext(ctx, asynq.NewTask("noop", nil), asynq.MaxRetry(0)); err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("asynq enqueue: %w", err))
					return
				}
			}
		})
	}
	wg.Wait()
	res.enqueue = time.Since(began)
	if err, _ := firstErr.Load().(error); err != nil {
		return res, err
	}
	var handled atomic.Int64
	done := make(chan struct{})
	h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if handled.Add(1) == int64(jobs) {
			close(done)
		}
		return nil
	})
	began = time.Now()
	servers := make([]*asynq.Server, workers)
	for i := range servers {
		servers[i] = asynq.NewServer(opt, asynq.Config{Concurrency: slots, TaskCheckInterval: time.Millisecond,
			Logger: slogLogger{}, LogLevel: asynq.ErrorLevel})
		if err := servers[i].Start(h); err != nil {
			return res, fmt.Errorf("asynq server: %w", err)
		}
	}
	defer func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	for { // the last tasks marked done in Redis
		q, err := insp.GetQueueInfo("default")
		if err != nil {
			return res, fmt.Errorf("asynq queue info: %w", err)
		}
		if q.Pending == 0 && q.Active == 0 {
			break
		}
		if err := pause(ctx, 2*time.Millisecond); err != nil {
			return res, err
		}
	}
	res.drain = time.Since(began)
	if _, err := insp.DeleteAllCompletedTasks("default"); err != nil {
		return res, fmt.Errorf("asynq: %w", err)
	}
	return res, nil
}

// slogLogger sends asynq's log lines (errors only, by LogLevel) to slog.
type slogLogger struct{}

func (slogLogger) Debug(args ...any) {}
func (slogLogger) Info(args ...any)  {}
func (slogLogger) Warn(args ...any)  { slog.Warn("asynq", "msg", fmt.Sprint(args...)) }
func (slogLogger) Error(args ...any) { slog.Error("asynq", "msg", fmt.Sprint(args...)) }
func (slogLogger) Fatal(args ...any) { slog.Error("asynq fatal", "msg", fmt.Sprint(args...)) }

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
