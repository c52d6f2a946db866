package zsock

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pebbe/zmq4"
)

// ZAP (RFC 27/ZAP) is how libzmq asks an application whether to admit a
// client: for each handshake on a server socket with a ZAP domain it sends
// a request to whoever is bound to inproc://zeromq.zap.01 in the process
// and waits for the reply. The handler here is process-wide (libzmq allows
// one per context) and dispatches on the domain, so several coordinators in
// one process (tests, drover crawl) each decide for their own sockets. Its
// goroutine owns its REP socket; it runs while at least one domain is
// registered.

// ZAPEndpoint is where libzmq sends ZAP requests.
const ZAPEndpoint = "inproc://zeromq.zap.01"

// ZAPRequest is what a ZAP handler is asked about one CURVE handshake.
type ZAPRequest struct {
	Domain  string // the server socket's ZAP domain
	Address string // the client's IP address
	Key     string // the client's public key, Z85
}

// ZAPFunc decides a handshake: it returns the user id ZeroMQ attaches to
// every message of the connection (MsgIO.RecvUser), or an error, whose
// text the client's socket monitor may show, to refuse it.
type ZAPFunc func(r ZAPRequest) (user string, err error)

var zap struct {
	life     sync.Mutex // held while the handler starts or stops
	mu       sync.Mutex // guards handlers (the handler's goroutine reads it)
	handlers map[string]ZAPFunc
	stop     chan struct{} // nil while the handler is not running
	done     chan struct{}
}

// HandleZAP registers f for domain, starting the process's ZAP handler if
// it is not running; unregister removes it (and stops the handler after
// the last one). Register before binding the sockets that use the domain,
// unregister after closing them.
func HandleZAP(domain string, f ZAPFunc) (unregister func(), err error) {
	if domain == "" || f == nil {
		return nil, errors.New("zsock: ZAP handler: want a domain and a function")
	}
	zap.life.Lock()
	defer zap.life.Unlock()
	zap.mu.Lock()
	_, dup := zap.handlers[domain]
	zap.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("zsock: ZAP domain %q is registered already", domain)
	}
	if zap.stop == nil {
		if err := startZAP(); err != nil {
			return nil, err
		}
	}
	zap.mu.Lock()
	if zap.handlers == nil {
		zap.handlers = make(map[string]ZAPFunc)
	}
	zap.handlers[domain] = f
	zap.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			zap.life.Lock()
			defer zap.life.Unlock()
			zap.mu.Lock()
			delete(zap.handlers, domain)
			last := len(zap.handlers) == 0
			zap.mu.Unlock()
			if last && zap.stop != nil {
				close(zap.stop)
				<-zap.done
				zap.stop, zap.done = nil, nil
			}
		})
	}, nil
}

// startZAP binds the handler's socket and starts its goroutine; zap.life
// is held.
func startZAP() error {
	rep, err := zmq4.NewSocket(zmq4.REP)
	if err != nil {
		return fmt.Errorf("zsock: ZAP handler socket: %w", err)
	}
	rep.SetLinger(0)
	if err := rep.Bind(ZAPEndpoint); err != nil {
		rep.Close()
		return fmt.Errorf("zsock: ZAP handler: bind %s: %w", ZAPEndpoint, err)
	}
	ring := make(chan struct{}, 1)
	w, err := NewWatch(rep, ring)
	if err != nil {
		rep.Close()
		return fmt.Errorf("zsock: ZAP handler: %w", err)
	}
	zap.stop, zap.done = make(chan struct{}), make(chan struct{})
	go serveZAP(rep, w, ring, zap.stop, zap.done)
	return nil
}

// serveZAP is the handler's goroutine: it owns rep.
func serveZAP(rep *zmq4.Socket, w *Watch, ring, stop, done chan struct{}) {
	defer close(done)
	defer func() {
		w.Close()
		// Unbind first: a closed socket's inproc endpoint is released by
		// libzmq later, and the next handler must be able to bind it at once.
		rep.Unbind(ZAPEndpoint)
		rep.Close()
	}()
	for {
		select {
		case <-stop:
			return
		case <-ring:
		}
		for {
			req, err := rep.RecvMessageBytes(zmq4.DONTWAIT)
			if err != nil {
				break // EAGAIN: wait for the next signal
			}
			if _, err := rep.SendMessage(zapReply(req)...); err != nil {
				break
			}
		}
	}
}

// zapReply answers one ZAP request (RFC 27: version, request id, domain,
// address, identity, mechanism, credentials) with version, request id,
// status code, status text, user id and metadata.
func zapReply(req [][]byte) []any {
	if len(req) < 6 {
		return []any{"1.0", "", "500", "malformed ZAP request", "", ""}
	}
	version, id := string(req[0]), req[1]
	if version != "1.0" {
		return []any{"1.0", id, "500", "ZAP version " + version + ", want 1.0", "", ""}
	}
	domain, address, mechanism := string(req[2]), string(req[3]), string(req[5])
	if mechanism != "CURVE" || len(req) != 7 || len(req[6]) != 32 {
		return []any{"1.0", id, "400", "mechanism " + mechanism + ": only CURVE clients are admitted", "", ""}
	}
	zap.mu.Lock()
	f := zap.handlers[domain]
	zap.mu.Unlock()
	if f == nil {
		return []any{"1.0", id, "400", "no handler for ZAP domain " + domain, "", ""}
	}
	user, err := f(ZAPRequest{Domain: domain, Address: address, Key: zmq4.Z85encode(string(req[6]))})
	if err != nil {
		return []any{"1.0", id, "400", err.Error(), "", ""}
	}
	return []any{"1.0", id, "200", "OK", user, ""}
}
