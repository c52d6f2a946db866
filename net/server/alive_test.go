package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/coord/id"
	"drover/net/wire"
)

// TestRefusedMessagesKeepTheSessionAlive: any message is a sign of life
// (docs/PROTOCOL.md §9) and a refused one must not end the session (§7): a
// producer that sends only malformed messages for longer than heartbeat ×
// liveness is not declared lost, and its next request is answered.
func TestRefusedMessagesKeepTheSessionAlive(t *testing.T) {
	s := startServer(t, Options{})
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1", Host: "test", Heartbeat: time.Second})
	wel := expect[*wire.Welcome](t, p.recv())
	silence := wel.Heartbeat * time.Duration(wel.Liveness)
	bad := [][]byte{[]byte(wire.Protocol), []byte("REQUEST"), {0, 0, 0, 0, 0, 0, 0, 2}, {0, 0, 0, 0}} // count 0: 400
	for end := time.Now().Add(silence + 2*wel.Heartbeat); time.Now().Before(end); {
		p.sendRaw(bad...)
		m, err := p.recvRaw(wel.Heartbeat)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := m.(*wire.Error); !ok || e.Code != wire.CodeMalformed {
			t.Fatalf("got %s %+v, want ERROR 400: the session must go on", m.Command(), m)
		}
		time.Sleep(wel.Heartbeat / 2) // the client's pace: nothing but refused messages
	}
	p.send(&wire.Request{Req: 3, Keys: []id.Key{key("http://alive.test/")}})
	if v := expect[*wire.Verdicts](t, p.recv()); v.Req != 3 {
		t.Fatalf("VERDICTS for request %d, want 3", v.Req)
	}
}

// recvRaw is recvWithin without answering HEARTBEATs: a client that says
// nothing of its own.
func (c *rawClient) recvRaw(d time.Duration) (wire.Message, error) {
	deadline := time.Now().Add(d)
	poller := zmq4.NewPoller()
	poller.Add(c.sock, zmq4.POLLIN)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, errors.New("no message before the deadline")
		}
		polled, err := poller.Poll(left)
		if err != nil || len(polled) == 0 {
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
		if _, hb := m.(*wire.Heartbeat); !hb {
			return m, nil
		}
	}
}
