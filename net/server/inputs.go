package server

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/net/internal/pipe"
	"drover/net/wire"
	"drover/net/zsock"
)

// How the reactor waits. Each socket it reads (peers ROUTER, admin ROUTER,
// events XPUB) has a zsock.Watch that, when libzmq signals the socket,
// notes it on the input and rings the reactor's one wake channel (which
// the pipe hub's queue signals too): the reactor waits on that channel,
// its timer and the store's, not on a channel per socket. Signals are
// edges: a socket must be worked until a receive would block before the
// reactor may wait for its next signal, and a send may take a signal meant
// for an arriving message. So each input is dirty (it may hold a message
// with no signal to come) from its signal, or a send on it, until a
// receive finds it empty or ZMQ_EVENTS says it has nothing. Only dirty inputs cost a libzmq call;
// each such call looks at libzmq's command pipe with a poll(2), so an
// input that is known to be empty is left alone.

// input is one socket the reactor reads, or the pipe hub of in-process
// peers (package pipe; sk is then nil).
type input struct {
	sk     *zmq4.Socket
	rang   atomic.Bool // the watch signalled since the reactor last looked
	watch  *zsock.Watch
	handle func(frames [][]byte, user string)
	// users: read each message's User-Id (the sender's key, with CURVE)
	users bool
	// value handles a message a pipe client handed over as a value (the
	// hub's input only).
	value func(ident []byte, m wire.Message, user string)
	dirty bool
	// emptyAt is when the input was last found empty (a read that ended
	// for want of messages, or busy): what was sent to it before then has
	// been read. See heardUntil.
	emptyAt time.Time
}

// drainBound is how many messages one input may hand the reactor in one
// iteration, so that a busy socket cannot starve the others or the timers.
const drainBound = 4096

// stepItemBudget bounds the keys and jobs one step takes in: readInputs
// and releaseLookups stop taking messages once the step has handled this
// many (a message is never split). Without it a client that pipelined a
// million-line submit made one step of all of it: one huge store batch,
// no reply (nor heartbeat, nor status) until it was durable, and the
// client gave up waiting. Bounded, replies flow while the rest waits.
const stepItemBudget = 20_000

// itemsOf is how many keys or jobs m carries, for stepItemBudget.
func itemsOf(m wire.Message) int {
	switch m := m.(type) {
	case *wire.Submit:
		return len(m.Jobs)
	case *wire.Request:
		return len(m.Keys)
	case *wire.Queue:
		return len(m.Keys)
	case *wire.Done:
		return len(m.Items)
	}
	return 1
}

// parkedItemBudget bounds the keys and jobs of the messages parked for
// their store lookups (donelookup.go): past it the reactor reads no more
// messages until lookups finish and release some. Without it a pipelined
// submit of millions of jobs into a serve paging its queue (every message
// of a session parks behind the first that waits for a lookup) was read
// whole into parked messages, hundreds of megabytes, faster than the
// lookups let them through; the garbage collector then ran without end
// at the soft memory limit, replies and heartbeats stalled, and the client
// took the coordinator for lost and sent everything again. Peers' silence
// is judged by what was read (heardUntil), so messages left unread here
// count against no session.
const parkedItemBudget = 2 * stepItemBudget

// overBudget reports whether the step has taken in its stepItemBudget.
func (s *Server) overBudget() bool { return s.stepItems >= stepItemBudget }

// readFull reports whether the reactor should read no more messages now:
// the step is overBudget, or the parked messages are full.
func (s *Server) readFull() bool { return s.overBudget() || s.parkedFull() }

// parkedFull reports whether the messages parked for their store lookups
// hold parkedItemBudget (donelookup.go).
func (s *Server) parkedFull() bool { return s.dur != nil && s.dur.look.full() }

// openInputs starts watching the sockets the reactor reads; closeInputs
// stops the watches (before the sockets close).
func (s *Server) openInputs() error {
	add := func(sk *zmq4.Socket, handle func([][]byte, string)) error {
		in := &input{sk: sk, handle: handle, dirty: true, users: s.auth != nil && sk != s.ev.pub}
		w, err := zsock.NewWatchFunc(sk, func() {
			in.rang.Store(true) // first: the reactor reads it once woken
			s.ring()
		})
		if err != nil {
			return fmt.Errorf("reactor: %w", err)
		}
		in.watch = w
		s.inputs = append(s.inputs, in)
		return nil
	}
	if err := add(s.peers, s.onPeer); err != nil {
		return err
	}
	if err := add(s.adm.sock, s.onAdmin); err != nil {
		return err
	}
	if s.ev.pub != nil {
		if err := add(s.ev.pub, s.onSubscription); err != nil {
			return err
		}
	}
	if s.hub != nil {
		s.inputs = append(s.inputs, &input{handle: s.onPeer, value: s.onPeerValue, dirty: true})
	}
	return nil
}

func (s *Server) closeInputs() {
	for _, in := range s.inputs {
		if in.watch != nil {
			in.watch.Close()
		}
	}
	s.inputs = nil
}

// sent marks the input of sk dirty: the send may have taken its signal.
func (s *Server) sent(sk *zmq4.Socket) {
	for _, in := range s.inputs {
		if in.sk == sk {
			in.dirty = true
			return
		}
	}
}

// readInputs hands the reactor what the dirty inputs hold, and what the
// others received since the last wait (their watches rang).
func (s *Server) readInputs() {
	start := s.now()
	for _, in := range s.inputs {
		if in.sk != nil && in.rang.Swap(false) {
			in.dirty = true
		}
		switch {
		case !in.dirty:
		case in.sk == nil:
			in.dirty = s.drainHub(in)
		default:
			in.dirty = s.drain(in)
		}
		if !in.dirty {
			in.emptyAt = start
		}
	}
}

// heardUntil is the time up to which every message sent to the server has
// been read: the oldest of the inputs' emptyAt. A session is silent only
// if it sent nothing since (coord.TickHeard), so the reactor's own busy
// time, its peers' heartbeats waiting unread, is not taken for silence.
func (s *Server) heardUntil() time.Time {
	var t time.Time
	for i, in := range s.inputs {
		if i == 0 || in.emptyAt.Before(t) {
			t = in.emptyAt
		}
	}
	return t
}

// drain handles the messages waiting on sk, at most drainBound; it
// reports whether it stopped at the bound (more may wait).
func (s *Server) drain(in *input) bool {
	for range drainBound {
		if s.readFull() {
			return true
		}
		var (
			frames [][]byte
			user   string
			err    error
		)
		if in.users {
			frames, user, err = s.io.RecvUser(in.sk, zmq4.DONTWAIT)
		} else {
			frames, err = s.io.Recv(in.sk, zmq4.DONTWAIT)
		}
		if err != nil {
			return false // EAGAIN: nothing more now, and a signal will come
		}
		s.stats.Received++
		in.handle(frames, user)
		s.handled()
	}
	return true
}

// handled runs after each message a step takes in: the heartbeats due are
// sent without waiting for the step's end. A step of 20,000 jobs on a
// coordinator that gets a few per cent of a core (two cores at a load of
// 25) outlasted a client's heartbeat × liveness: the client took the
// coordinator for lost, and a 2,000,000-line submit sent its batches in
// flight again on a new session, over and over, until a reply was more
// than --timeout late.
func (s *Server) handled() {
	if s.hooks.msg != nil {
		s.hooks.msg()
	}
	s.heartbeats(s.now())
}

// drainHub handles what in-process peers sent, at most drainBound; it
// reports whether more wait.
func (s *Server) drainHub(in *input) bool {
	if s.readFull() {
		return true
	}
	msgs, more := s.hub.Take(s.taken[:0], drainBound)
	for i, m := range msgs {
		msgs[i] = pipe.Msg{}
		s.stats.Received++
		// In-process peers have no key: they are this process.
		if m.Value != nil {
			in.value(m.Ident, m.Value, "")
		} else {
			in.handle(m.Frames, "")
		}
		s.handled()
	}
	s.taken = msgs[:0]
	return more
}

// busy looks at each dirty input (ZMQ_EVENTS) and reports whether one has
// a message: then the reactor must not wait. Inputs found empty are clean.
// It is called before every wait, so it first wakes the in-process peers
// sent to since the last wait (pipe.Hub.Flush): each wakes once for all
// the reactor had for it.
func (s *Server) busy() (bool, error) {
	if s.hub != nil {
		s.hub.Flush()
	}
	busy := false
	now := s.now()
	// With the parked messages at their budget the inputs wait, dirty,
	// for the lookup goroutine's doorbell: looking at them would only spin.
	parkedFull := s.parkedFull()
	for _, in := range s.inputs {
		if !in.dirty || parkedFull {
			continue
		}
		read := false
		if in.sk == nil {
			read = s.hub.Pending()
		} else {
			var err error
			if read, _, err = zsock.Ready(in.sk); err != nil {
				return false, err
			}
		}
		in.dirty = read
		if !read {
			in.emptyAt = now
		}
		busy = busy || read
	}
	if s.dur != nil && len(s.dur.look.parked) > 0 && s.dur.look.parked[0].looked {
		busy = true // releaseLookups stopped at the step's budget
	}
	return busy, nil
}

// ring wakes the reactor (its sockets' watches call it; the pipe hub's
// queue signals the same channel).
func (s *Server) ring() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait blocks until an input signals (one channel for them all, s.wake),
// the store rings, timer fires or done closes, and marks dirty every
// socket whose watch rang and the pipe hub (whose queue is looked at for
// the price of a lock). It reports false when timer fired or done closed.
//
// Under load it may let messages gather first (gatherer): they are all
// read in the step that follows.
func (s *Server) wait(stored <-chan struct{}, timer <-chan time.Time, done <-chan struct{}) bool {
	woke, byMessage := true, false
	from := time.Now()
	select {
	case <-s.wake:
		byMessage = true
	case <-stored:
	case <-timer:
		woke = false
	case <-done:
		woke = false
	}
	if s.gather.woke(from, time.Now(), byMessage) {
		select { // what rang meanwhile is marked below: its ring is spent
		case <-s.wake:
		default:
		}
	}
	for _, in := range s.inputs {
		if in.sk == nil || in.rang.Swap(false) {
			in.dirty = true
		}
	}
	return woke
}

// linger keeps the sockets open until d has passed, reading and dropping
// what arrives, so that peers read the DISCONNECTs just sent.
func (s *Server) linger(d time.Duration) {
	for _, in := range s.inputs {
		in.handle = func([][]byte, string) {}
		in.value = func([]byte, wire.Message, string) {}
	}
	keep := time.NewTimer(d)
	defer keep.Stop()
	for {
		s.readInputs()
		busy, err := s.busy()
		if err != nil {
			return
		}
		if busy {
			select {
			case <-keep.C:
				return
			default:
				continue
			}
		}
		if !s.wait(nil, keep.C, nil) {
			return
		}
	}
}

// onSubscription handles what the events XPUB passes up: a frame per
// topic prefix that gained its first subscriber (1, prefix) or lost its
// last (0, prefix). Events nobody subscribes to are not encoded at all.
func (s *Server) onSubscription(frames [][]byte, _ string) {
	if len(frames) != 1 || len(frames[0]) == 0 {
		return
	}
	msg := frames[0]
	switch prefix := string(msg[1:]); msg[0] {
	case 1:
		s.ev.subs[prefix] = true
	case 0:
		delete(s.ev.subs, prefix)
	}
	s.keyEvents()
}

// keyEvents tells the coordinator whether anyone takes key events (the
// OnEvent hook, or a subscription that may match a key.* kind): a REQUEST
// of 1,000 keys nobody watches then builds no 1,000 events.
func (s *Server) keyEvents() {
	on := s.opts.OnEvent != nil
	for prefix := range s.ev.subs {
		on = on || strings.HasPrefix(prefix, admin.KeyTopic) || strings.HasPrefix(admin.KeyTopic, prefix)
	}
	s.c.PublishKeyEvents(on)
}
