package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pebbe/zmq4"

	"drover/coord"
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

// reactor is the Server's loop part: the inputs it reads (the sockets
// and the pipe hub of in-process peers), the one channel that wakes it,
// whether it may wait (busy), the gathering of messages under load, the
// step's item budget, the heartbeats sent between a step's messages, the
// scratch that messages are handled in, and the last reads at shutdown
// (linger). Server.Run's loop drives it; each input's handler is the
// Server's routing to the part that handles the message (openInputs). The
// reactor goroutine owns it; only wake and the counters are touched
// elsewhere.
type reactor struct {
	inputs []*input      // the sockets the reactor reads
	hub    *pipe.Hub     // in-process peers on the inproc peers endpoint
	wake   chan struct{} // the inputs' watches and the hub ring it
	gather gatherer      // lets messages gather under load (gather.go)
	io     zsock.MsgIO   // whole-message receives
	// dec decodes the sockets' messages: a REQUEST's or QUEUE's keys are
	// its room, valid until the next message (a parked one takes them:
	// doneLookup.park).
	dec   wire.Decoder
	taken []pipe.Msg // scratch for drainHub
	stats *Stats     // Steps, Received
	now   func() time.Time
	// stepItems counts the keys and jobs the current step took in
	// (stepItemBudget).
	stepItems int
	// look holds the messages parked for their store lookups
	// (donelookup.go; nil without a store): at their budget no more is
	// read, and one whose lookups are done makes the reactor busy.
	look  *doneLookup
	sess  *sessions // their heartbeats, sent after each message (handled)
	hooks *hooks    // tests' ways in: hooks.msg runs after each message
	// scratch for the peers' messages (peers.go): reused, cleared after
	// each use
	scratch struct {
		results  []coord.Result
		specs    []coord.JobSpec
		verdicts []coord.ResultVerdict
		// for REQUEST and QUEUE (peerMessage, verdicts)
		keyVerdicts []coord.Verdict
		items       []wire.VerdictItem
	}
	strs interner // short strings jobs repeat, one copy each (compact.go)
	// counters mirror the step counters for ReactorStats (metrics read
	// them while the reactor runs).
	counters   struct{ steps, messages, gathered atomic.Uint64 }
	lastTotals time.Time // when Options.OnTotals was last called
	ready      atomic.Bool
}

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

// begin begins a step: it counts it, and reads what the inputs hold (up
// to the step's budget).
func (r *reactor) begin() {
	r.stats.Steps++
	r.stepItems = 0
	r.readInputs()
}

// mirror copies the step counters for ReactorStats (counts).
func (r *reactor) mirror() {
	r.counters.steps.Store(r.stats.Steps)
	r.counters.messages.Store(r.stats.Received)
	r.counters.gathered.Store(r.gather.gathered)
}

// counts reads the counters mirror copied; safe while Run runs.
func (r *reactor) counts() ReactorStats {
	return ReactorStats{
		Steps:    r.counters.steps.Load(),
		Messages: r.counters.messages.Load(),
		Gathered: r.counters.gathered.Load(),
	}
}

// overBudget reports whether the step has taken in its stepItemBudget.
func (r *reactor) overBudget() bool { return r.stepItems >= stepItemBudget }

// readFull reports whether the reactor should read no more messages now:
// the step is overBudget, or the parked messages are full.
func (r *reactor) readFull() bool { return r.overBudget() || r.look.full() }

// openInputs starts watching the sockets the reactor reads, each with the
// part that handles its messages; closeInputs stops the watches (before
// the sockets close).
func (s *Server) openInputs() error {
	users := s.auth != nil // the ROUTERs' messages carry their sender's key
	if err := s.r.watch(s.peers.sock, s.onPeer, users); err != nil {
		return err
	}
	if err := s.r.watch(s.adm.sock, s.onAdmin, users); err != nil {
		return err
	}
	if s.ev.pub != nil {
		if err := s.r.watch(s.ev.pub, s.ev.onSubscription, false); err != nil {
			return err
		}
	}
	if s.r.hub != nil {
		s.r.inputs = append(s.r.inputs, &input{handle: s.onPeer, value: s.onPeerValue, dirty: true})
	}
	return nil
}

// watch adds sk to the inputs, its messages handed to handle (with their
// User-Id when users).
func (r *reactor) watch(sk *zmq4.Socket, handle func([][]byte, string), users bool) error {
	in := &input{sk: sk, handle: handle, dirty: true, users: users}
	w, err := zsock.NewWatchFunc(sk, func() {
		in.rang.Store(true) // first: the reactor reads it once woken
		r.ring()
	})
	if err != nil {
		return fmt.Errorf("reactor: %w", err)
	}
	in.watch = w
	r.inputs = append(r.inputs, in)
	return nil
}

func (r *reactor) closeInputs() {
	for _, in := range r.inputs {
		if in.watch != nil {
			in.watch.Close()
		}
	}
	r.inputs = nil
}

// sent marks the input of sk dirty: the send may have taken its signal.
func (r *reactor) sent(sk *zmq4.Socket) {
	for _, in := range r.inputs {
		if in.sk == sk {
			in.dirty = true
			return
		}
	}
}

// readInputs hands the reactor what the dirty inputs hold, and what the
// others received since the last wait (their watches rang).
func (r *reactor) readInputs() {
	start := r.now()
	for _, in := range r.inputs {
		if in.sk != nil && in.rang.Swap(false) {
			in.dirty = true
		}
		switch {
		case !in.dirty:
		case in.sk == nil:
			in.dirty = r.drainHub(in)
		default:
			in.dirty = r.drain(in)
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
func (r *reactor) heardUntil() time.Time {
	var t time.Time
	for i, in := range r.inputs {
		if i == 0 || in.emptyAt.Before(t) {
			t = in.emptyAt
		}
	}
	return t
}

// drain handles the messages waiting on sk, at most drainBound; it
// reports whether it stopped at the bound (more may wait).
func (r *reactor) drain(in *input) bool {
	for range drainBound {
		if r.readFull() {
			return true
		}
		var (
			frames [][]byte
			user   string
			err    error
		)
		if in.users {
			frames, user, err = r.io.RecvUser(in.sk, zmq4.DONTWAIT)
		} else {
			frames, err = r.io.Recv(in.sk, zmq4.DONTWAIT)
		}
		if err != nil {
			return false // EAGAIN: nothing more now, and a signal will come
		}
		r.stats.Received++
		in.handle(frames, user)
		r.handled()
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
func (r *reactor) handled() {
	if r.hooks.msg != nil {
		r.hooks.msg()
	}
	r.sess.heartbeats(r.now())
}

// drainHub handles what in-process peers sent, at most drainBound; it
// reports whether more wait.
func (r *reactor) drainHub(in *input) bool {
	if r.readFull() {
		return true
	}
	msgs, more := r.hub.Take(r.taken[:0], drainBound)
	for i, m := range msgs {
		msgs[i] = pipe.Msg{}
		r.stats.Received++
		// In-process peers have no key: they are this process.
		if m.Value != nil {
			in.value(m.Ident, m.Value, "")
		} else {
			in.handle(m.Frames, "")
		}
		r.handled()
	}
	r.taken = msgs[:0]
	return more
}

// busy looks at each dirty input (ZMQ_EVENTS) and reports whether one has
// a message: then the reactor must not wait. Inputs found empty are clean.
// It is called before every wait, so it first wakes the in-process peers
// sent to since the last wait (pipe.Hub.Flush): each wakes once for all
// the reactor had for it.
func (r *reactor) busy() (bool, error) {
	// With the parked messages at their budget the inputs wait, dirty,
	// for the lookup goroutine's doorbell: looking at them would only spin.
	busy, err := r.lookInputs(r.look.full())
	if err != nil {
		return false, err
	}
	if r.look.released() {
		busy = true // releaseLookups stopped at the step's budget
	}
	return busy, nil
}

// lookInputs is busy's look at the inputs (none when skip).
func (r *reactor) lookInputs(skip bool) (bool, error) {
	if r.hub != nil {
		r.hub.Flush()
	}
	busy := false
	now := r.now()
	for _, in := range r.inputs {
		if !in.dirty || skip {
			continue
		}
		read := false
		if in.sk == nil {
			read = r.hub.Pending()
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
	return busy, nil
}

// ring wakes the reactor (its sockets' watches call it; the pipe hub's
// queue signals the same channel).
func (r *reactor) ring() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// wait blocks until an input signals (one channel for them all, r.wake),
// the store rings, timer fires or done closes, and marks dirty every
// socket whose watch rang and the pipe hub (whose queue is looked at for
// the price of a lock). It reports false when timer fired or done closed.
//
// Under load it may let messages gather first (gatherer): they are all
// read in the step that follows.
func (r *reactor) wait(stored <-chan struct{}, timer <-chan time.Time, done <-chan struct{}) bool {
	woke, byMessage := true, false
	from := time.Now()
	select {
	case <-r.wake:
		byMessage = true
	case <-stored:
	case <-timer:
		woke = false
	case <-done:
		woke = false
	}
	if r.gather.woke(from, time.Now(), byMessage) {
		select { // what rang meanwhile is marked below: its ring is spent
		case <-r.wake:
		default:
		}
	}
	for _, in := range r.inputs {
		if in.sk == nil || in.rang.Swap(false) {
			in.dirty = true
		}
	}
	return woke
}

// linger keeps the sockets open until d has passed, reading and dropping
// what arrives, so that peers read the DISCONNECTs just sent.
func (r *reactor) linger(d time.Duration) {
	for _, in := range r.inputs {
		in.handle = func([][]byte, string) {}
		in.value = func([]byte, wire.Message, string) {}
	}
	keep := time.NewTimer(d)
	defer keep.Stop()
	for {
		r.readInputs()
		busy, err := r.busy()
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
		if !r.wait(nil, keep.C, nil) {
			return
		}
	}
}
