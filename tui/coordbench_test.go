package tui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"drover/admin"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/server"
	"drover/net/wire"
	"drover/net/worker"
	"drover/net/zsock"
)

// Sizes of the coordinator BenchmarkFrameCoordinator renders.
const (
	coordBenchJobs    = 1_000_000
	coordBenchWorkers = 10_000
	coordBenchSlots   = 3
	// coordBenchHeartbeat is tuned from the default 1 s: 10k sessions
	// heartbeating every second on this 2-core machine shared with other
	// work starve the reactor and are declared lost. A fleet this size
	// would be run with a longer heartbeat too (heartbeat.interval).
	coordBenchHeartbeat = 30 * time.Second
)

var (
	coordOnce  sync.Once
	coordSrv   *server.Server
	coordErr   error
	coordSetup time.Duration
)

// bigCoordinator starts, once per process, a real coordinator (net/server,
// default settings but coordBenchHeartbeat, no store) holding coordBenchJobs jobs
// submitted over its peers socket and coordBenchWorkers in-process worker
// sessions of coordBenchSlots slots each, every slot busy with a job that
// never ends. The server and its workers live until the process exits.
func bigCoordinator(b *testing.B) *server.Server {
	b.Helper()
	coordOnce.Do(func() {
		began := time.Now()
		coordSrv, coordErr = startBigCoordinator(context.Background())
		coordSetup = time.Since(began)
	})
	if coordErr != nil {
		b.Fatal(coordErr)
	}
	return coordSrv
}

func startBigCoordinator(ctx context.Context) (*server.Server, error) {
	opts := server.Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-"}
	opts.Coord.Heartbeat = coordBenchHeartbeat
	srv, err := server.New(opts)
	if err != nil {
		return nil, err
	}
	go srv.Run(ctx)
	c, err := client.Dial(ctx, client.Options{Connect: srv.InprocPeers(), ID: "bench-producer", Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	const chunk = 10_000
	items := make([]wire.SubmitItem, chunk)
	payload := []byte(`{"depth":1}`)
	for n := 0; n < coordBenchJobs; n += chunk {
		for i := range items {
			k := n + i
			items[i] = wire.SubmitItem{Payload: payload, Key: id.Key{Crawler: "news", Processor: "html",
				URL: fmt.Sprintf("https://site-%04d.example.com/articles/%07d", k%5000, k)}}
		}
		if _, err := c.Submit(ctx, items); err != nil {
			return nil, fmt.Errorf("submit jobs %d-%d: %w", n, n+chunk, err)
		}
	}
	hold := func(ctx context.Context, _ worker.Job) worker.Result {
		<-ctx.Done()
		return worker.Result{Error: "stopped"}
	}
	adm, err := client.DialAdmin(ctx, client.AdminOptions{Connect: srv.InprocAdmin(), ID: "bench-wait", Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	// Workers join a thousand at a time, each thousand registered before
	// the next starts.
	deadline := time.Now().Add(15 * time.Minute)
	for n := 0; n < coordBenchWorkers; {
		for end := min(n+1000, coordBenchWorkers); n < end; n++ {
			opts := worker.Options{Connect: srv.InprocPeers(), ID: fmt.Sprintf("w-%05d", n), Host: fmt.Sprintf("crawler-%03d", n%300),
				Slots: coordBenchSlots, Headers: map[string]string{"region": "eu", "threads": "8"}}
			go worker.Run(ctx, opts, hold)
		}
		for {
			t, err := adm.Totals(ctx)
			if err == nil && t.WorkersIdle+t.WorkersBusy >= n && t.Queued+t.Dispatched >= coordBenchJobs {
				break
			}
			if time.Now().After(deadline) {
				return nil, errors.Join(fmt.Errorf("coordinator not filled within 15 min (%d workers started): %+v", n, t), err)
			}
			time.Sleep(100 * time.Millisecond) // a poll with a deadline, while the sessions register
		}
	}
	return srv, nil
}

// BenchmarkFrameCoordinator is BenchmarkFrame against a real coordinator
// instead of the console's in-memory test backend: net/server holding 1M
// jobs and 10k busy workers (30k jobs dispatched), the console on the
// real backend (net/client.Admin) over the admin socket, in-process
// (inproc, as the embedded console) and over loopback TCP (as `drover
// console --connect`). Each frame is one full round (totals, the window,
// the detail pane when open), Update and View, at 120x40. Settings are
// the defaults but the heartbeat (coordBenchHeartbeat: 30 s, the default
// 1 s does not hold 10k sessions on a shared 2-core machine); the
// console's Refresh cooldown and poll timer are off, the benchmark drives
// every round.
func BenchmarkFrameCoordinator(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a coordinator with 1M jobs and 10k workers")
	}
	srv := bigCoordinator(b)
	b.Logf("coordinator filled in %v", coordSetup.Round(time.Second))
	cases := []struct {
		name  string
		view  string
		setup []string
		frame func(m *model) string
	}{
		{name: "jobs/refresh", view: "2", frame: refreshFrame},
		{name: "jobs/refresh-at-last-row", view: "2", setup: []string{"G"}, frame: refreshFrame},
		{name: "jobs/detail-open", view: "2", setup: []string{"enter"}, frame: refreshFrame},
		{name: "jobs/key-j", view: "2", frame: keyFrame("j")},
		{name: "jobs/key-pgdown", view: "2", frame: keyFrame("pgdown")},
		{name: "workers/refresh", view: "1", frame: refreshFrame},
		{name: "workers/key-j", view: "1", frame: keyFrame("j")},
	}
	for _, transport := range []string{"inproc", "tcp"} {
		ep := srv.InprocAdmin()
		if transport == "tcp" {
			ep = srv.AdminEndpoint()
		}
		adm, err := client.DialAdmin(b.Context(), client.AdminOptions{Connect: ep, ID: "bench-console-" + transport, Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range cases {
			b.Run(transport+"/"+tc.name, func(b *testing.B) {
				m := consoleOn(b, adm, tc.view)
				for _, k := range tc.setup {
					keyFrame(k)(m)
				}
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					n += len(tc.frame(m))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
				if n == 0 || m.coord.stale {
					b.Fatalf("no frame, or the console went stale: %s", m.coord.staleErr)
				}
			})
		}
		adm.Close()
	}
}

// consoleOn is a console model on a backend at 120x40, its first window
// loaded; its timers and Changed wait are off (the benchmark drives it).
func consoleOn(b *testing.B, be Backend, view string) *model {
	b.Helper()
	m := newModel(b.Context(), be, Options{Theme: "dark", Timeout: time.Minute})
	m.after = func(time.Duration, tea.Msg) tea.Cmd { return nil }
	m.blocking = func(tea.Cmd) tea.Cmd { return nil }
	drain(m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	drain(m, cmd)
	_, cmd = m.Update(keyPress(view))
	drain(m, cmd)
	if !m.pane().loaded || m.pane().page.Total == 0 {
		b.Fatalf("first window of view %s not loaded (stale %v: %s)", view, m.coord.stale, m.coord.staleErr)
	}
	if m.pane().view == admin.ViewJobs && m.pane().page.Total < coordBenchJobs {
		b.Fatalf("jobs view shows %d rows, want %d", m.pane().page.Total, coordBenchJobs)
	}
	return m
}
