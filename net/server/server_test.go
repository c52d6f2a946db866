package server

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
	"drover/net/zsock"
)

// startServer runs a server on ephemeral loopback ports (events too) until
// the test ends, which fails if Run returned an error.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Events = zsock.Ephemeral
	s, stop := runServer(t, opts)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server run: %v", err)
		}
	})
	return s
}

// rawClient is a DEALER speaking DRV/1 by hand, for tests that need to see
// or break the protocol.
type rawClient struct {
	t    *testing.T
	sock *zmq4.Socket
}

func dial(t *testing.T, endpoint string) *rawClient {
	t.Helper()
	sk, err := zsock.Dealer(endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	return &rawClient{t: t, sock: sk}
}

func (c *rawClient) send(m wire.Message) {
	c.t.Helper()
	frames, err := wire.Encode(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(frames...)
}

func (c *rawClient) sendRaw(frames ...[]byte) {
	c.t.Helper()
	parts := make([]any, len(frames))
	for i, f := range frames {
		parts[i] = f
	}
	if _, err := c.sock.SendMessage(parts...); err != nil {
		c.t.Fatal(err)
	}
}

// recv returns the next message other than HEARTBEAT, within a deadline.
// recvDeadline bounds the wait for a message a test expects: generous, since
// a race-instrumented server on a loaded 2-core machine can take seconds
// over a big batch (it only costs time when the test fails anyway).
const recvDeadline = 20 * time.Second

func (c *rawClient) recv() wire.Message {
	c.t.Helper()
	m, err := c.recvWithin(recvDeadline)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// recvFrames returns the next message's frames undecoded, within a
// deadline.
func (c *rawClient) recvFrames() [][]byte {
	c.t.Helper()
	poller := zmq4.NewPoller()
	poller.Add(c.sock, zmq4.POLLIN)
	polled, err := poller.Poll(recvDeadline)
	if err != nil || len(polled) == 0 {
		c.t.Fatalf("no message before the deadline (%v)", err)
	}
	frames, err := c.sock.RecvMessageBytes(0)
	if err != nil {
		c.t.Fatal(err)
	}
	return frames
}

func (c *rawClient) recvWithin(d time.Duration) (wire.Message, error) {
	deadline := time.Now().Add(d)
	poller := zmq4.NewPoller()
	poller.Add(c.sock, zmq4.POLLIN)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, errors.New("no message before the deadline")
		}
		polled, err := poller.Poll(left)
		if err != nil {
			return nil, err
		}
		if len(polled) == 0 {
			continue
		}
		frames, err := c.sock.RecvMessageBytes(0)
		if err != nil {
			return nil, err
		}
		m, err := wire.Decode(frames)
		if err != nil {
			return nil, fmt.Errorf("server sent an undecodable message: %w", err)
		}
		if _, hb := m.(*wire.Heartbeat); hb {
			c.send(&wire.Heartbeat{}) // keep our session alive
			continue
		}
		return m, nil
	}
}

func expect[T wire.Message](t *testing.T, m wire.Message) T {
	t.Helper()
	v, ok := m.(T)
	if !ok {
		t.Fatalf("got %s %+v, want %T", m.Command(), m, *new(T))
	}
	return v
}

func key(u string) id.Key { return id.Key{Crawler: "c", Processor: "p", URL: u} }

// submitNumbered submits the keys of prefix+"0" to prefix+(n-1) from p in
// one SUBMIT with request id req and waits for its SUBMITTED.
func submitNumbered(t *testing.T, p *rawClient, req uint64, prefix string, n int) {
	t.Helper()
	items := make([]wire.SubmitItem, n)
	for i := range items {
		items[i] = wire.SubmitItem{Key: key(prefix + strconv.Itoa(i))}
	}
	p.send(&wire.Submit{Req: req, Jobs: items})
	expect[*wire.Submitted](t, p.recv())
}

func TestSubmitDispatchResult(t *testing.T) {
	finished := make(chan string, 10)
	s := startServer(t, Options{OnFinished: func(f broker.Finished) { finished <- f.Key.URL }})
	w := dial(t, s.PeersEndpoint())
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "test", Slots: 2})
	wel := expect[*wire.Welcome](t, w.recv())
	if wel.Slots != 2 || wel.Heartbeat != testHeartbeat {
		t.Fatalf("welcome %+v: want 2 slots and a %v heartbeat", wel, testHeartbeat)
	}
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1"})
	expect[*wire.Welcome](t, p.recv())
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/")}, {Key: key("http://a.test/x")}, {Key: key("HTTP://A.test:80/")}}})
	sub := expect[*wire.Submitted](t, p.recv())
	if got := fmt.Sprint(sub.Items[0].Status, sub.Items[1].Status, sub.Items[2].Status); got != "accepted accepted duplicate" {
		t.Fatalf("submitted %+v: want accepted, accepted, duplicate", sub.Items)
	}
	job := expect[*wire.Job](t, w.recv())
	jobs := job.Jobs
	if len(jobs) < 2 {
		jobs = append(jobs, expect[*wire.Job](t, w.recv()).Jobs...)
	}
	if len(jobs) != 2 {
		t.Fatalf("worker got %d jobs, want 2 (two free slots)", len(jobs))
	}
	w.send(&wire.Result{Req: 9, Items: []wire.ResultItem{
		{JobID: jobs[0].JobID, Attempt: jobs[0].Attempt, Outcome: wire.OutcomeOK, Links: []wire.SubmitItem{{Key: key("http://a.test/y")}, {Key: key("http://a.test/x")}}},
		{JobID: jobs[1].JobID, Attempt: jobs[1].Attempt, Outcome: wire.OutcomeOK},
	}})
	ok := expect[*wire.ResultOK](t, w.recv())
	if ok.Req != 9 || ok.Items[0].Status != wire.ResultRecorded || ok.Items[0].Accepted != 1 || ok.Items[0].Duplicates != 1 {
		t.Fatalf("result-ok %+v: want recorded, 1 accepted, 1 duplicate", ok)
	}
	next := expect[*wire.Job](t, w.recv())
	if len(next.Jobs) != 1 || next.Jobs[0].Key.URL != "http://a.test/y" {
		t.Fatalf("next job %+v: want the discovered http://a.test/y", next.Jobs)
	}
	got := map[string]bool{<-finished: true, <-finished: true}
	if !got["http://a.test/"] || !got["http://a.test/x"] {
		t.Fatalf("finished %v: want http://a.test/ and http://a.test/x", got)
	}
}

// TestMalformedGetsErrorAndServerKeepsServing sends broken messages and
// checks each gets an ERROR with the right code while a well-behaved
// producer is served.
func TestMalformedGetsErrorAndServerKeepsServing(t *testing.T) {
	s := startServer(t, Options{})
	bad := dial(t, s.PeersEndpoint())
	good := dial(t, s.PeersEndpoint())
	good.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "good"})
	expect[*wire.Welcome](t, good.recv())
	cases := []struct {
		name   string
		frames [][]byte
		code   wire.Code
	}{
		{"wrong protocol", [][]byte{[]byte("AMQP"), []byte("HELLO"), make([]byte, 8), nil}, wire.CodeMalformed},
		{"newer version", [][]byte{[]byte("DRV3"), []byte("HELLO"), make([]byte, 8), nil}, wire.CodeVersion},
		{"older version", [][]byte{[]byte("DRV1"), []byte("HELLO"), make([]byte, 8), nil}, wire.CodeVersion},
		{"unknown command", [][]byte{[]byte("DRV2"), []byte("FROB"), make([]byte, 8)}, wire.CodeUnknownCommand},
		{"truncated", [][]byte{[]byte("DRV2"), []byte("SUBMIT"), make([]byte, 8), {0, 0}}, wire.CodeMalformed},
		{"before hello", mustEncode(t, &wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: key("http://x.test/")}}}), wire.CodeHelloRequired},
	}
	for _, tc := range cases {
		bad.sendRaw(tc.frames...)
		var e *wire.Error
		if tc.code == wire.CodeVersion {
			// Refused in the version it spoke, so that it can read why.
			frames := bad.recvFrames()
			if string(frames[0]) != string(tc.frames[0]) {
				t.Errorf("%s: answered in %q, want %q", tc.name, frames[0], tc.frames[0])
			}
			frames[0] = []byte(wire.Protocol)
			m, err := wire.Decode(frames)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			e = expect[*wire.Error](t, m)
		} else {
			e = expect[*wire.Error](t, bad.recv())
		}
		if e.Code != tc.code {
			t.Errorf("%s: code %d (%s), want %d", tc.name, e.Code, e.Msg, tc.code)
		}
		good.send(&wire.Request{Req: 2, Keys: []id.Key{key("http://x.test/" + tc.name[:3])}})
		expect[*wire.Verdicts](t, good.recv())
	}
}

func mustEncode(t *testing.T, m wire.Message) [][]byte {
	frames, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}
