package worker

import (
	"context"
	"testing"
	"time"

	"drover/net/wire"
)

// TestRobotsShared: a worker with Options.Robots announces drv.robots=1,
// hands the server's ROBOTS to it before the following JOB runs, and
// reports a handler's robots.txt (ROBOTS) before the RESULT carrying it.
// A server that does not know ROBOTS (ERROR 501) gets no more reports.
func TestRobotsShared(t *testing.T) {
	srv := newScripted(t)
	copies := make(chan wire.Robots, 4)
	seen := make(chan int, 4) // copies received when each job started
	report := &wire.Robots{Origin: "http://r.test", TTL: time.Hour, CrawlDelay: time.Second, Content: []byte("User-agent: *\n")}
	runWorker(t, srv.EP, Options{ID: "w", Robots: func(r wire.Robots) { copies <- r }}, func(ctx context.Context, j Job) Result {
		seen <- len(copies)
		return Result{Outcome: wire.OutcomeOK, Robots: report}
	})
	h := srv.Greet()
	if m := h.Headers.Map(); m[wire.RobotsHeader] != "1" {
		t.Fatalf("HELLO headers %v, want %s=1", h.Headers, wire.RobotsHeader)
	}
	srv.Send(&wire.Robots{Origin: "http://r.test", TTL: time.Minute, Content: []byte("User-agent: *\nDisallow: /x\n")})
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(7, "http://r.test/a")}})
	if n := recvT(t, seen, "job 7 started"); n != 1 {
		t.Fatalf("job 7 started with %d copies handed over, want 1 (ROBOTS comes before the JOB)", n)
	}
	if c := <-copies; c.Origin != "http://r.test" || c.TTL != time.Minute || string(c.Content) != "User-agent: *\nDisallow: /x\n" {
		t.Fatalf("copy %+v, want the server's", c)
	}
	rep := expect[*wire.Robots](t, srv.Next())
	if rep.Origin != report.Origin || rep.CrawlDelay != time.Second || rep.Req == 0 {
		t.Fatalf("report %+v, want the handler's with a request id", rep)
	}
	r := expect[*wire.Result](t, srv.Next())
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 7, Attempt: 1, Status: wire.ResultRecorded}}})

	// An older server answers 501: no report goes with the next result.
	srv.Send(&wire.Error{Req: rep.Req, Code: wire.CodeUnknownCommand, Msg: `command "ROBOTS" is not a DRV/2 command`})
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(8, "http://r.test/b")}})
	recvT(t, seen, "job 8 started")
	r = expect[*wire.Result](t, srv.Next())
	if r.Items[0].JobID != 8 {
		t.Fatalf("RESULT for %d, want job 8 (and no ROBOTS before it)", r.Items[0].JobID)
	}
}
