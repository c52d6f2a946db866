package server

import (
	"log/slog"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/wire"
	"drover/net/zsock"
)

// TestSenderCounts: the sender counts what it sent, what could not be
// delivered and what it refused (in Stats and the coordinator's figures),
// marks the socket it sent on for the reactor, and a refusal reaches its
// peer as an ERROR with the request id and text.
func TestSenderCounts(t *testing.T) {
	router, err := zsock.Router("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	ep, err := zsock.Endpoint(router)
	if err != nil {
		t.Fatal(err)
	}
	var (
		st        Stats
		dirtied   []*zmq4.Socket
		malformed int
	)
	o := &sender{
		peers: router, admin: router, stats: &st, log: slog.New(slog.DiscardHandler),
		dirty: func(sk *zmq4.Socket) { dirtied = append(dirtied, sk) }, malformed: func() { malformed++ },
	}

	if o.toPeer([]byte("nobody"), &wire.Heartbeat{}) {
		t.Fatal("a send to a routing id nobody has reported delivered")
	}
	if st.Undeliverable != 1 || st.Sent != 0 || len(dirtied) != 1 || dirtied[0] != router {
		t.Fatalf("after an undeliverable send: %+v, %d sockets marked, want 1 undeliverable, 0 sent, the router marked", st, len(dirtied))
	}

	// A peer the router knows (it heard from it first).
	dealer, err := zmq4.NewSocket(zmq4.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	defer dealer.Close()
	for _, f := range []func() error{
		func() error { return dealer.SetIdentity("d1") },
		func() error { return dealer.SetLinger(0) },
		func() error { return dealer.SetRcvtimeo(30 * time.Second) },
		func() error { return router.SetRcvtimeo(30 * time.Second) },
		func() error { return dealer.Connect(ep) },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dealer.SendBytes([]byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := router.RecvMessageBytes(0); err != nil {
		t.Fatalf("the router did not hear from the dealer: %v", err)
	}

	o.reject(onAdmin, []byte("d1"), 7, wire.CodeMalformed, "bad %s", "thing")
	if st.Malformed != 1 || malformed != 1 || st.Sent != 1 || st.Undeliverable != 1 {
		t.Fatalf("after a refusal: %+v, coordinator's count %d, want 1 malformed (and counted by the coordinator), 1 sent", st, malformed)
	}
	frames, err := dealer.RecvMessageBytes(0)
	if err != nil {
		t.Fatalf("the refusal did not arrive: %v", err)
	}
	m, err := wire.Decode(frames)
	if err != nil {
		t.Fatalf("the refusal does not decode: %v", err)
	}
	if e, ok := m.(*wire.Error); !ok || e.Req != 7 || e.Code != wire.CodeMalformed || e.Msg != "bad thing" {
		t.Fatalf("the refusal is %#v, want ERROR req 7, code %v, %q", m, wire.CodeMalformed, "bad thing")
	}
}
