// Package pipe carries DRV/2 messages between a server and clients in the
// same process over Go memory instead of ZeroMQ.
//
// `drover crawl` runs its workers in the coordinator's process; through an
// inproc ZeroMQ socket each message costs libzmq calls on both ends (with
// a poll(2) each time a socket is found empty) and a wake-up through the
// file-descriptor signal ZeroMQ uses. A pipe is a pair of queues and
// channel tokens, at a fraction of the cost. Remote peers are unaffected;
// the server serves both at once.
//
// The server's messages go to a client as wire.Message values handed over
// whole; a client's go to the server either so or as encoded frames,
// copied on send (the sender may reuse its buffers at once, and the server
// owns what it gets). A value is not encoded, copied or decoded: its
// sender gives it up with everything it refers to (it must not change
// them afterwards). Senders
// validate a value as they would encode it (net/internal/conn and
// net/server encode it and drop the frames), so both ends see exactly the
// messages DRV/2 can carry.
//
// A server listens on its inproc peers endpoint name; a client (the
// connection loop of net/internal/conn) dials that name and falls back to
// ZeroMQ when no server in this process listens on it. Queues are
// unbounded: every client in the process is drover's own library, which
// bounds what it has in flight (slots, request windows), so there is no
// high-water mark to hit.
package pipe

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"drover/net/wire"
)

// Errors of Send.
var (
	// ErrClosed: the other end has closed (a server that stopped, a client
	// that went away).
	ErrClosed = errors.New("pipe closed")
	// ErrUnroutable: the server has no client with that routing id.
	ErrUnroutable = errors.New("no such pipe client")
)

// identPrefix starts every client routing id: a ZeroMQ routing id a peer
// sets cannot start with a zero byte, and the ones a ROUTER makes up are
// five bytes long, so these never collide with a ZeroMQ peer's.
const identPrefix = "\x00pipe:"

// IsClient reports whether a routing id is a pipe client's.
func IsClient(ident []byte) bool {
	return len(ident) > len(identPrefix) && string(ident[:len(identPrefix)]) == identPrefix
}

var (
	mu        sync.Mutex
	listeners = map[string]*Hub{}
	clientSeq atomic.Uint64
)

// Msg is one message through a pipe: Frames (copies, from a client only)
// or Value (handed over). At the server, Ident is the sending client's
// routing id, and Frames start with it.
type Msg struct {
	Ident  []byte
	Frames [][]byte
	Value  wire.Message
}

// queue is a FIFO of messages with a token channel that is given a token
// on every push (coalesced: one waiting token is enough).
type queue struct {
	mu     sync.Mutex
	items  []Msg
	closed bool
	sig    chan struct{}
}

func newQueue(sig chan struct{}) *queue { return &queue{sig: sig} }

func (q *queue) push(m Msg) error {
	if err := q.add(m); err != nil {
		return err
	}
	q.signal()
	return nil
}

// add queues m without giving a token (see Hub.Flush).
func (q *queue) add(m Msg) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.items = append(q.items, m)
	return nil
}

// signal gives the queue's reader a token (unless one already waits).
func (q *queue) signal() {
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

// take moves up to max messages into dst and reports whether more wait.
func (q *queue) take(dst []Msg, max int) ([]Msg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.items), max)
	dst = append(dst, q.items[:n]...)
	if n == len(q.items) {
		clear(q.items)
		q.items = q.items[:0] // keep the array
	} else {
		clear(q.items[:n])
		q.items = q.items[n:]
	}
	return dst, len(q.items) > 0
}

func (q *queue) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.mu.Unlock()
}

// copyFrames copies ident and frames into one allocation.
func copyFrames(ident []byte, frames [][]byte) [][]byte {
	n := len(ident)
	for _, f := range frames {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, 0, len(frames)+1)
	add := func(f []byte) {
		start := len(buf)
		buf = append(buf, f...)
		out = append(out, buf[start:len(buf):len(buf)])
	}
	add(ident)
	for _, f := range frames {
		add(f)
	}
	return out
}

// Hub is a server's end of the pipes of one endpoint name. Its methods
// may be called from any goroutine; the server reads it from one.
type Hub struct {
	name string
	in   *queue // from every client: routing id, then the frames

	mu      sync.Mutex
	clients map[string]*Client
	closed  bool
	unrung  []*Client // sent to since the last Flush
}

// Listen makes endpoint (the server's inproc peers name) reachable by
// pipe. Its queue signals sig (give it a buffer of one).
func Listen(endpoint string, sig chan struct{}) (*Hub, error) {
	mu.Lock()
	defer mu.Unlock()
	if _, taken := listeners[endpoint]; taken {
		return nil, errors.New("pipe: " + endpoint + " is already listened on")
	}
	h := &Hub{name: endpoint, in: newQueue(sig), clients: map[string]*Client{}}
	listeners[endpoint] = h
	return h, nil
}

// Take moves up to max received messages into dst and reports whether
// more wait.
func (h *Hub) Take(dst []Msg, max int) ([]Msg, bool) { return h.in.take(dst, max) }

// Pending reports whether messages wait to be taken.
func (h *Hub) Pending() bool { return h.in.pending() }

// SendValue hands m to the client with routing id ident (see the package
// comment: the server gives m up).
func (h *Hub) SendValue(ident []byte, m wire.Message) error {
	return h.send(ident, Msg{Value: m})
}

// send queues m for the client with routing id ident; the client is
// woken by the next Flush. A server sends all it has for a client (a
// RESULT-OK and the next JOB, say) before it flushes, so that the client
// wakes once for them rather than once each.
func (h *Hub) send(ident []byte, m Msg) error {
	h.mu.Lock()
	c := h.clients[string(ident)]
	if c != nil && !c.unrung {
		c.unrung = true
		h.unrung = append(h.unrung, c)
	}
	h.mu.Unlock()
	if c == nil {
		return ErrUnroutable
	}
	return c.in.add(m)
}

// Flush wakes every client sent to since the last Flush. The server calls
// it before it waits.
func (h *Hub) Flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.unrung {
		c.unrung = false
		c.in.signal()
		h.unrung[i] = nil
	}
	h.unrung = h.unrung[:0]
}

// Close stops listening: clients' sends fail with ErrClosed from now on,
// and their receive reports the pipe closed once they have read what was
// sent before.
func (h *Hub) Close() {
	mu.Lock()
	if listeners[h.name] == h {
		delete(listeners, h.name)
	}
	mu.Unlock()
	h.mu.Lock()
	h.closed = true
	clients := h.clients
	h.clients = map[string]*Client{}
	h.mu.Unlock()
	h.in.close()
	for _, c := range clients {
		c.hubClosed.Store(true)
		select {
		case c.in.sig <- struct{}{}:
		default:
		}
	}
}

// Client is a client's end of a pipe: used by one goroutine.
type Client struct {
	hub       *Hub
	ident     []byte
	in        *queue // from the server
	hubClosed atomic.Bool
	unrung    bool // in hub.unrung; guarded by hub.mu
}

// Dial connects to the server listening on endpoint in this process; ok
// is false when there is none (use ZeroMQ). The client's queue signals
// sig.
func Dial(endpoint string, sig chan struct{}) (c *Client, ok bool) {
	mu.Lock()
	h := listeners[endpoint]
	mu.Unlock()
	if h == nil {
		return nil, false
	}
	c = &Client{hub: h, ident: []byte(identPrefix + strconv.FormatUint(clientSeq.Add(1), 10)), in: newQueue(sig)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	h.clients[string(c.ident)] = c
	return c, true
}

// Ident is the client's routing id, as the server sees it.
func (c *Client) Ident() []byte { return c.ident }

// Send queues a copy of frames for the server.
func (c *Client) Send(frames [][]byte) error {
	if c.hubClosed.Load() {
		return ErrClosed
	}
	return c.hub.in.push(Msg{Ident: c.ident, Frames: copyFrames(c.ident, frames)})
}

// SendValue hands m to the server (see the package comment: the client
// gives m up).
func (c *Client) SendValue(m wire.Message) error {
	if c.hubClosed.Load() {
		return ErrClosed
	}
	return c.hub.in.push(Msg{Ident: c.ident, Value: m})
}

// Take moves up to max messages from the server into dst and reports
// whether more wait; err is ErrClosed once the server has closed and
// everything it sent was taken.
func (c *Client) Take(dst []Msg, max int) ([]Msg, bool, error) {
	dst, more := c.in.take(dst, max)
	if len(dst) == 0 && c.hubClosed.Load() {
		return dst, false, ErrClosed
	}
	return dst, more, nil
}

// Pending reports whether messages from the server wait to be taken.
func (c *Client) Pending() bool { return c.in.pending() || c.hubClosed.Load() }

// Close ends the client: the server's sends to it fail as unroutable. What
// it sent before reaches the server.
func (c *Client) Close() {
	c.hub.mu.Lock()
	if c.hub.clients[string(c.ident)] == c {
		delete(c.hub.clients, string(c.ident))
	}
	c.hub.mu.Unlock()
	c.in.close()
}
