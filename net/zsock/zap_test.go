package zsock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
)

// clientFailure waits for the first handshake outcome a monitored client
// sees: nil for a success.
func clientFailure(t *testing.T, ep string, sec Security) (*zmq4.Socket, *HandshakeError) {
	t.Helper()
	ready := make(chan struct{}, 1)
	var hs *Handshakes
	d := dealer(t, ep, "", WithSecurity(sec), WithBeforeConnect(func(s *zmq4.Socket) error {
		var err error
		hs, err = MonitorHandshakes(s, ready)
		return err
	}))
	t.Cleanup(hs.Close) // runs before the dealer's close (LIFO)
	deadline := time.After(wait)
	for {
		select {
		case <-ready:
		case <-deadline:
			t.Fatalf("no handshake outcome within %v", wait)
		}
		if done, f := hs.Outcome(); done {
			return d, f
		}
	}
}

// The ZAP handler admits the keys its function admits, names the
// connection with the user id it returns, and every other client learns
// from its monitor that it was refused.
func TestZAP(t *testing.T) {
	if !zmq4.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	srvPub, srvSec, _ := NewKeyPair()
	okPub, okSec, _ := NewKeyPair()
	badPub, badSec, _ := NewKeyPair()
	otherPub, _, _ := NewKeyPair()
	unregister, err := HandleZAP("test.peers", func(r ZAPRequest) (string, error) {
		if r.Domain != "test.peers" || r.Address != "127.0.0.1" {
			return "", errors.New("unexpected request")
		}
		if r.Key == okPub {
			return "user-" + r.Key, nil
		}
		return "", errors.New("key not listed")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	if _, err := HandleZAP("test.peers", func(ZAPRequest) (string, error) { return "", nil }); err == nil {
		t.Fatal("a domain registered twice: no error")
	}
	router, ep := loopbackRouter(t, WithSecurity(Security{Secret: srvSec, Domain: "test.peers"}))

	good, f := clientFailure(t, ep, Security{ServerPublic: srvPub, Public: okPub, Secret: okSec})
	if f != nil {
		t.Fatalf("listed key: %v", f)
	}
	send(t, good, "hello")
	p := zmq4.NewPoller()
	p.Add(router, zmq4.POLLIN)
	if polled, err := p.Poll(wait); err != nil || len(polled) == 0 {
		t.Fatalf("nothing received within %v: %v", wait, err)
	}
	var io MsgIO
	frames, user, err := io.RecvUser(router, zmq4.DONTWAIT)
	if err != nil || string(frames[1]) != "hello" || user != "user-"+okPub {
		t.Fatalf("got %q from user %q, err %v", frames, user, err)
	}

	_, f = clientFailure(t, ep, Security{ServerPublic: srvPub, Public: badPub, Secret: badSec})
	if f == nil || !f.Auth() || f.Value != 400 {
		t.Fatalf("unlisted key: %v, want an AUTH failure with status 400", f)
	}
	t.Logf("unlisted key: %v", f)
	_, f = clientFailure(t, ep, Security{})
	if f == nil || f.Event != zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL || f.Value != protocolMechanismMismatch {
		t.Fatalf("no key: %v, want a mechanism mismatch", f)
	}
	_, f = clientFailure(t, ep, Security{ServerPublic: otherPub, Public: okPub, Secret: okSec})
	if f == nil || f.Auth() {
		t.Fatalf("wrong server key: %v, want a failure other than AUTH", f)
	}
	for _, f := range []*HandshakeError{
		{Event: zmq4.EVENT_HANDSHAKE_FAILED_AUTH, Value: 400},
		{Event: zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL, Value: protocolMechanismMismatch},
		{Event: zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL},
	} {
		if !strings.HasPrefix(f.Error(), "not authorised: ") {
			t.Errorf("%v: message %q does not say not authorised", f.Event, f.Error())
		}
	}
}

// A server socket with a domain nobody handles admits nobody.
func TestZAPUnknownDomain(t *testing.T) {
	if !zmq4.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	srvPub, srvSec, _ := NewKeyPair()
	unregister, err := HandleZAP("test.other", func(ZAPRequest) (string, error) { return "anyone", nil })
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	_, ep := loopbackRouter(t, WithSecurity(Security{Secret: srvSec, Domain: "test.unhandled"}))
	if _, f := clientFailure(t, ep, Security{ServerPublic: srvPub}); f == nil || !f.Auth() {
		t.Fatalf("unhandled domain: %v, want an AUTH failure", f)
	}
}
