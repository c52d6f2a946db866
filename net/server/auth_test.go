package server

import (
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/auth"
	"drover/net/wire"
	"drover/net/zsock"
)

// fleet is a server with CURVE on and one key per role (and one key
// unlisted).
type fleet struct {
	s                                     *Server
	server                                auth.KeyPair
	keys                                  *auth.Authorizer
	worker, worker2, producer, op, viewer auth.KeyPair
	unlisted                              auth.KeyPair
	forbidden                             chan string // keys, from OnForbidden
}

func newKeys(t *testing.T, n int) []auth.KeyPair {
	t.Helper()
	out := make([]auth.KeyPair, n)
	for i := range out {
		kp, err := auth.NewKeyPair()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = kp
	}
	return out
}

func keyring(t *testing.T, lines ...string) *auth.Keyring {
	t.Helper()
	k, err := auth.ParseAuthorizedKeys("test", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	if !zmq4.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	ks := newKeys(t, 7)
	f := &fleet{server: ks[0], worker: ks[1], worker2: ks[2], producer: ks[3], op: ks[4], viewer: ks[5], unlisted: ks[6],
		forbidden: make(chan string, 100)}
	f.keys = auth.Static(keyring(t,
		"worker "+f.worker.Public+" w1",
		"worker "+f.worker2.Public+" w2",
		"producer "+f.producer.Public,
		"operator "+f.op.Public+" ops",
		"viewer "+f.viewer.Public+" dashboard"))
	f.s = startServer(t, Options{Auth: &Auth{
		Secret: f.server.Secret, Keys: f.keys,
		OnForbidden: func(e auth.Entry) { f.forbidden <- e.Key },
	}})
	return f
}

// as dials endpoint with kp's keys (a zero pair: without CURVE).
func (f *fleet) as(t *testing.T, endpoint string, kp auth.KeyPair) *rawClient {
	t.Helper()
	var sec zsock.Security
	if kp.Secret != "" {
		sec = zsock.Security{ServerPublic: f.server.Public, Public: kp.Public, Secret: kp.Secret}
	}
	sk, err := zsock.Dealer(endpoint, "", zsock.WithSecurity(sec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	return &rawClient{t: t, sock: sk}
}

// handshake dials endpoint with kp's keys (zero: none) and returns how
// its first handshake ended: nil for a success. (A DEALER whose handshake
// fails never has a connection: a send would block.)
func (f *fleet) handshake(t *testing.T, endpoint string, kp auth.KeyPair, sub bool) *zsock.HandshakeError {
	t.Helper()
	var sec zsock.Security
	if kp.Secret != "" {
		sec = zsock.Security{ServerPublic: f.server.Public, Public: kp.Public, Secret: kp.Secret}
	}
	ready := make(chan struct{}, 1)
	var hs *zsock.Handshakes
	hook := zsock.WithBeforeConnect(func(s *zmq4.Socket) (err error) {
		hs, err = zsock.MonitorHandshakes(s, ready)
		return err
	})
	var sk *zmq4.Socket
	var err error
	if sub {
		sk, err = zsock.Sub(endpoint, nil, zsock.WithSecurity(sec), hook)
	} else {
		sk, err = zsock.Dealer(endpoint, "", zsock.WithSecurity(sec), hook)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	defer hs.Close()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-ready:
		case <-deadline:
			t.Fatalf("%s: no handshake outcome within 5s", endpoint)
		}
		if done, f := hs.Outcome(); done {
			return f
		}
	}
}

// reply is the next message other than CHANGED (a console's pushes come
// whenever state changed).
func (c *rawClient) reply() wire.Message {
	c.t.Helper()
	for {
		m := c.recv()
		if _, changed := m.(*wire.Changed); !changed {
			return m
		}
	}
}

func expectCode(t *testing.T, m wire.Message, code wire.Code, what string) {
	t.Helper()
	e, ok := m.(*wire.Error)
	if !ok || e.Code != code {
		t.Fatalf("%s: got %s %+v, want ERROR %d", what, m.Command(), m, code)
	}
}

// Each role gets exactly its rights, on the peers and the admin socket,
// and every refusal is ERROR 403, counted.
func TestRolesOverCurve(t *testing.T) {
	f := startFleet(t)
	sub := []wire.SubmitItem{{Key: key("http://roles.test/1")}}

	// worker: HELLO as a worker only; no SUBMIT, no console.
	w := f.as(t, f.s.PeersEndpoint(), f.worker)
	w.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "w-as-producer", Host: "h"})
	expectCode(t, w.recv(), wire.CodeForbidden, "worker key HELLO as producer")
	w.send(&wire.Hello{Req: 2, Role: wire.RoleWorker, ID: "w1", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, w.recv())
	w.send(&wire.Submit{Req: 3, Jobs: sub})
	expectCode(t, w.recv(), wire.CodeForbidden, "worker key SUBMIT")
	wa := f.as(t, f.s.AdminEndpoint(), f.worker)
	wa.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "c", Host: "h"})
	expectCode(t, wa.reply(), wire.CodeForbidden, "worker key HELLO as console")

	// producer: SUBMIT yes (the worker gets the job), RESULT no.
	p := f.as(t, f.s.PeersEndpoint(), f.producer)
	p.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "p-as-worker", Host: "h", Slots: 1})
	expectCode(t, p.recv(), wire.CodeForbidden, "producer key HELLO as worker")
	p.send(&wire.Hello{Req: 2, Role: wire.RoleProducer, ID: "p1", Host: "h"})
	expect[*wire.Welcome](t, p.recv())
	p.send(&wire.Submit{Req: 3, Jobs: sub})
	expect[*wire.Submitted](t, p.recv())
	job := expect[*wire.Job](t, w.recv())
	p.send(&wire.Result{Req: 4, Items: []wire.ResultItem{{JobID: job.Jobs[0].JobID, Attempt: job.Jobs[0].Attempt, Outcome: wire.OutcomeOK}}})
	expectCode(t, p.recv(), wire.CodeForbidden, "producer key RESULT")
	w.send(&wire.Result{Req: 5, Items: []wire.ResultItem{{JobID: job.Jobs[0].JobID, Attempt: job.Jobs[0].Attempt, Outcome: wire.OutcomeOK}}})
	expect[*wire.ResultOK](t, w.recv())

	// viewer: queries and totals, never an action, never the peers socket.
	v := f.as(t, f.s.AdminEndpoint(), f.viewer)
	v.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "v", Host: "h"})
	expect[*wire.Welcome](t, v.reply())
	v.send(&wire.Status{Req: 2})
	expect[*wire.Totals](t, v.reply())
	v.send(&wire.Query{Req: 3, Query: admin.Query{View: admin.ViewWorkers, Limit: 10}})
	expect[*wire.Page](t, v.reply())
	for i, a := range []admin.Action{
		{Kind: admin.ActPause}, {Kind: admin.ActRequeueFailed},
		{Kind: admin.ActEvict, Targets: []string{"w1"}}, {Kind: admin.ActRequeue, Targets: []string{"1"}},
	} {
		v.send(&wire.Action{Req: uint64(10 + i), Action: a})
		expectCode(t, v.reply(), wire.CodeForbidden, "viewer "+string(a.Kind))
	}
	vp := f.as(t, f.s.PeersEndpoint(), f.viewer)
	vp.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "v-as-producer", Host: "h"})
	expectCode(t, vp.recv(), wire.CodeForbidden, "viewer key HELLO as producer")

	// operator: everything, a pause included (and the worker is not
	// disturbed by any of the refusals above).
	o := f.as(t, f.s.AdminEndpoint(), f.op)
	o.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "o", Host: "h"})
	expect[*wire.Welcome](t, o.reply())
	o.send(&wire.Action{Req: 2, Action: admin.Action{Kind: admin.ActPause}})
	expect[*wire.Acted](t, o.reply())
	op := f.as(t, f.s.PeersEndpoint(), f.op)
	op.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "o-producer", Host: "h"})
	expect[*wire.Welcome](t, op.recv())

	o.send(&wire.Status{Req: 3})
	tot := expect[*wire.Totals](t, o.reply()).Totals
	// worker: 3 (HELLO producer, SUBMIT, console), producer: 2, viewer: 5.
	if tot.Forbidden != 10 {
		t.Fatalf("forbidden total %d, want 10", tot.Forbidden)
	}
	if tot.Malformed != 0 {
		t.Fatalf("malformed %d: refusals counted as malformed", tot.Malformed)
	}
	byKey := map[string]int{}
	for range 10 {
		byKey[<-f.forbidden]++
	}
	if byKey[f.worker.Public] != 3 || byKey[f.producer.Public] != 2 || byKey[f.viewer.Public] != 5 {
		t.Fatalf("refusals by key: worker %d, producer %d, viewer %d; want 3, 2, 5",
			byKey[f.worker.Public], byKey[f.producer.Public], byKey[f.viewer.Public])
	}
}

// An unlisted key and a client without a key never complete a handshake
// on any listener; a worker key cannot read the events.
func TestUnlistedKeysRefused(t *testing.T) {
	f := startFleet(t)
	eps := map[string]string{"peers": f.s.PeersEndpoint(), "admin": f.s.AdminEndpoint(), "events": f.s.EventsEndpoint()}
	for l, ep := range eps {
		if h := f.handshake(t, ep, f.unlisted, l == "events"); h == nil || !h.Auth() {
			t.Errorf("unlisted key on %s: %v, want refused by the server (ZAP)", l, h)
		}
		if h := f.handshake(t, ep, auth.KeyPair{}, l == "events"); h == nil {
			t.Errorf("no key on %s: admitted", l)
		}
		if h := f.handshake(t, ep, f.op, l == "events"); h != nil {
			t.Errorf("operator key on %s: %v", l, h)
		}
	}
	if h := f.handshake(t, eps["events"], f.worker, true); h == nil || !h.Auth() {
		t.Errorf("worker key on events: %v, want refused", h)
	}
	if h := f.handshake(t, eps["events"], f.viewer, true); h != nil {
		t.Errorf("viewer key on events: %v", h)
	}
	// Counted: the unlisted key on each listener, the worker on events.
	if n := f.s.auth.refused.Load(); n != 4 {
		t.Errorf("refused handshakes %d, want 4", n)
	}
}

// A worker id belongs to the key that holds it: another key's HELLO with
// that id is refused while the session lives; the same key takes it over.
func TestWorkerIDBoundToKey(t *testing.T) {
	f := startFleet(t)
	a := f.as(t, f.s.PeersEndpoint(), f.worker)
	a.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "shared", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, a.recv())

	b := f.as(t, f.s.PeersEndpoint(), f.worker2)
	b.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "shared", Host: "h", Slots: 1})
	expectCode(t, b.recv(), wire.CodeConflict, "another key claiming a live id")
	a.send(&wire.Heartbeat{})

	again := f.as(t, f.s.PeersEndpoint(), f.worker)
	again.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "shared", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, again.recv())
	if d := expect[*wire.Disconnect](t, a.recv()); d.Code != wire.CodeConflict {
		t.Fatalf("the superseded session got DISCONNECT %d, want 409", d.Code)
	}

	// Once its holder has said goodbye, the id is free for another key.
	again.send(&wire.Disconnect{Code: wire.CodeOK, Reason: "bye"})
	deadline := time.Now().Add(5 * time.Second)
	for req := uint64(2); ; req++ {
		b.send(&wire.Hello{Req: req, Role: wire.RoleWorker, ID: "shared", Host: "h", Slots: 1})
		m := b.recv()
		if _, ok := m.(*wire.Welcome); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the id was not freed: %s %+v", m.Command(), m)
		}
	}
}

// Removing a key ends its sessions without a restart: DISCONNECT 403, and
// anything it sends afterwards is refused.
func TestRevokedKeySessionsEnd(t *testing.T) {
	f := startFleet(t)
	w := f.as(t, f.s.PeersEndpoint(), f.worker)
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, w.recv())
	v := f.as(t, f.s.AdminEndpoint(), f.viewer)
	v.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "v", Host: "h"})
	expect[*wire.Welcome](t, v.reply())
	stay := f.as(t, f.s.PeersEndpoint(), f.worker2)
	stay.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w2", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, stay.recv())

	f.keys.Set(keyring(t, "worker "+f.worker2.Public, "operator "+f.op.Public))
	if d := expect[*wire.Disconnect](t, w.recv()); d.Code != wire.CodeForbidden {
		t.Fatalf("revoked worker: DISCONNECT %d, want 403", d.Code)
	}
	if d := expect[*wire.Disconnect](t, v.reply()); d.Code != wire.CodeForbidden {
		t.Fatalf("revoked viewer: DISCONNECT %d, want 403", d.Code)
	}
	w.send(&wire.Hello{Req: 2, Role: wire.RoleWorker, ID: "w1", Host: "h", Slots: 1})
	expectCode(t, w.recv(), wire.CodeForbidden, "HELLO of a revoked key")
	stay.send(&wire.Heartbeat{})
	if m, err := stay.recvWithin(500 * time.Millisecond); err == nil {
		if d, ok := m.(*wire.Disconnect); ok {
			t.Fatalf("a key still listed was disconnected: %+v", d)
		}
	}
	// And a new connection of the revoked key fails its handshake.
	if h := f.handshake(t, f.s.PeersEndpoint(), f.worker, false); h == nil || !h.Auth() {
		t.Fatalf("a revoked key's new connection: %v, want refused", h)
	}
}

// A message of a revoked key handled before the reactor looks at the
// sessions again (the keys changed while it was reading) ends its session
// the same way: DISCONNECT 403, so that the client stops, not an ERROR 403
// it would take for a refused command while its session is gone.
func TestRevokedKeyMessageFirst(t *testing.T) {
	f := startFleet(t)
	w := f.as(t, f.s.PeersEndpoint(), f.worker)
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "h", Slots: 1})
	expect[*wire.Welcome](t, w.recv())
	v := f.as(t, f.s.AdminEndpoint(), f.viewer)
	v.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "v", Host: "h"})
	expect[*wire.Welcome](t, v.reply())

	// The reactor is not told of the change: only the messages see it.
	f.s.auth.cancel()
	f.keys.Set(keyring(t, "worker "+f.worker2.Public, "operator "+f.op.Public))
	w.send(&wire.Heartbeat{})
	if d := expect[*wire.Disconnect](t, w.recv()); d.Code != wire.CodeForbidden {
		t.Fatalf("revoked worker's message: DISCONNECT %d, want 403", d.Code)
	}
	v.send(&wire.Heartbeat{})
	if d := expect[*wire.Disconnect](t, v.reply()); d.Code != wire.CodeForbidden {
		t.Fatalf("revoked viewer's message: DISCONNECT %d, want 403", d.Code)
	}
}
