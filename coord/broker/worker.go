package broker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// WorkerInfo is what a worker announces when it registers.
type WorkerInfo struct {
	ID      string            // stable worker id; a re-registration with the same id replaces the record
	Host    string            // the machine it runs on, as it reports it
	Headers map[string]string // capabilities matched against job headers
	Slots   int               // concurrent jobs it accepts; 0 means 1
}

// worker is the registry's record of one worker. A lost worker keeps its
// record (state lost, no session) for the console until it re-registers, is
// evicted, or is pushed out by newer lost records (Config.LostWorkers).
type worker struct {
	link     links[worker] // its place in the ready list; first: readyLink
	id       string
	hostname string
	session  id.Session
	headers  map[string]string
	slots    int
	held     []*job
	draining bool
	lost     bool
	classes  []*class // classes whose headers this worker satisfies

	inReady  bool
	lastUsed uint64 // LRU clock at the last assignment

	done, failures uint64
	results        uint64 // results recorded from this registration (the death policy's proof of health)
	heldUntil      int64  // held back after early deaths until (Unix ns); 0 when not
	since, seen    int64
}

// takesJobs reports whether the worker may get new jobs at all.
func (w *worker) takesJobs() bool { return !w.lost && !w.draining }

func (w *worker) free() int { return w.slots - len(w.held) }

func (w *worker) stateName() string {
	switch {
	case w.lost:
		return "lost"
	case w.draining:
		return "draining"
	case w.heldUntil > 0:
		return "held"
	case len(w.held) > 0:
		return "busy"
	}
	return "idle"
}

// workerList is the ready list, least recently used first.
type workerList struct{ list[worker, readyLink] }

// insert places w by its lastUsed, after every worker used no later.
func (l *workerList) insert(w *worker) {
	after := l.tail
	for after != nil && after.lastUsed > w.lastUsed {
		after = after.link.prev
	}
	l.insertAfter(after, w)
	w.inReady = true
}

func (l *workerList) remove(w *worker) {
	l.list.remove(w)
	w.inReady = false
}

// syncReady puts w in or out of the ready list after its slots, draining or
// lost flag changed.
func (b *Broker) syncReady(w *worker) {
	want := w.takesJobs() && w.free() > 0 && w.heldUntil == 0
	switch {
	case want && !w.inReady:
		b.ready.insert(w)
	case !want && w.inReady:
		b.ready.remove(w)
	}
}

// Register adds a live worker on session s. A worker that registers again
// with the same ID replaces its old record: of the old record's jobs, those
// whose current attempt held lists stay with the worker and the others are
// requeued uncharged. A held run that is the current attempt of a job the
// broker has put back in the queue meanwhile (the worker was lost, or the
// coordinator restarted) is re-adopted: the same attempt goes on, on this
// worker, and no new attempt is counted. After a restore, a held run one
// attempt past the job's restored one is adopted (unrecorded.go). Held runs that are unknown,
// finished, of another attempt or another worker's are left alone (their
// results will be stale; the caller tells the worker to drop them).
func (b *Broker) Register(now time.Time, s id.Session, info WorkerInfo, held []Run) error {
	if s == 0 {
		return fmt.Errorf("register worker %q: session 0 is not a valid session", info.ID)
	}
	if info.ID == "" {
		return fmt.Errorf("register on session %d: empty worker id, want a stable non-empty id", s)
	}
	if info.Slots < 0 {
		return fmt.Errorf("register worker %q: slots %d, want >= 1 (or 0 for 1)", info.ID, info.Slots)
	}
	if other, ok := b.sessions[s]; ok && other.id != info.ID {
		return fmt.Errorf("register worker %q: session %d is already worker %q", info.ID, s, other.id)
	}
	t := ns(now)
	slots := info.Slots
	if slots == 0 {
		slots = 1
	}
	hdr := make(map[string]string, len(info.Headers))
	for k, v := range info.Headers {
		hdr[k] = v
	}
	nw := &worker{id: info.ID, hostname: info.Host, session: s, headers: hdr, slots: slots, since: t, seen: t}
	for _, c := range b.classAll {
		if Match(c.headers, hdr) {
			nw.classes = append(nw.classes, c)
		}
	}
	keep := make(map[Run]bool, len(held))
	for _, r := range held {
		keep[r] = true
	}
	old := b.workers[info.ID]
	if old != nil {
		b.unlinkWorker(old, t)
		for _, j := range slices.Clone(old.held) {
			b.release(j, t)
			if keep[Run{j.jobID(), int(b.jobAttempts(j))}] {
				b.hold(nw, j, t)
				b.emit(admin.Event{At: now, Kind: admin.EventJobReconciled, JobID: uint64(j.id), URL: b.url(j), Worker: nw.id, Detail: KeptDetail})
				continue
			}
			b.endAttempt(j, "requeued", "worker re-registered without it")
			b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), URL: b.url(j), Worker: old.id, Detail: "re-registered without it"})
			b.place(j, t, now)
		}
		b.dropRecord(old)
		b.emit(admin.Event{At: now, Kind: admin.EventWorkerReplaced, Worker: info.ID, Detail: "session " + strconv.FormatUint(uint64(old.session), 10) + " -> " + strconv.FormatUint(uint64(s), 10)})
	}
	b.workers[nw.id] = nw
	b.sessions[s] = nw
	i, _ := slices.BinarySearchFunc(b.wsorted, nw.id, func(w *worker, id string) int { return strings.Compare(w.id, id) })
	b.wsorted = slices.Insert(b.wsorted, i, nw)
	for _, c := range nw.classes {
		c.gainWorker(b)
	}
	b.gen++
	for _, r := range held {
		if b.adoptUnrecorded(now, t, nw, r) { // unrecorded.go
			continue
		}
		b.nameSkipped(now, nw.id, r)
		j := b.jobs.get(r.Job)
		if j == nil || (j.state != Queued && !b.retrying(j)) || int(b.jobAttempts(j)) != r.Attempt || r.Attempt < 1 {
			continue
		}
		a, ok := b.attemptEntry(j, r.Attempt)
		if !ok || a.worker != nw.id {
			continue // another worker's attempt: not this one's to claim
		}
		b.readopt(j) // retry.go: out of the queue or the retry delay
		b.setState(j, Dispatched, t)
		b.hold(nw, j, t)
		h := b.moreOf(j).history                      // attemptEntry found it
		h[len(h)-1].outcome, h[len(h)-1].err = "", "" // running again
		b.emit(admin.Event{At: now, Kind: admin.EventJobReconciled, JobID: uint64(j.id), URL: b.url(j), Worker: nw.id})
	}
	b.holdOnRegister(nw, t)
	b.syncReady(nw)
	b.emit(admin.Event{At: now, Kind: admin.EventWorkerRegistered, Worker: nw.id, Detail: "slots " + strconv.Itoa(slots)})
	return nil
}

// KeptDetail is the Detail of the job.reconciled event of a job a
// re-registering worker keeps from its old record: nothing of the job's
// record changed (same worker id, same attempt), so it needs no write.
const KeptDetail = "kept by its new session"

// hold gives a dispatched job to w at t; its host counts it in flight.
func (b *Broker) hold(w *worker, j *job, t int64) {
	m := b.moreFor(j)
	b.reorder(j, sortWorker, func() { m.worker = w })
	m.heldIdx = int32(len(w.held))
	w.held = append(w.held, j)
	if j.has(jobFree) {
		return
	}
	h := b.hostOf(j)
	h.inflight++
	if c := h.capNow(); !h.parked && c > 0 && h.inflight >= c {
		b.refresh(h, t)
	}
}

// release takes a job from its worker's slots.
func (b *Broker) release(j *job, t int64) {
	m := b.moreOf(j)
	w := m.worker
	i := int(m.heldIdx)
	last := len(w.held) - 1
	w.held[i] = w.held[last]
	b.moreOf(w.held[i]).heldIdx = int32(i)
	w.held[last] = nil
	w.held = w.held[:last]
	b.reorder(j, sortWorker, func() { m.worker = nil })
	m.heldIdx = -1
	if j.has(jobFree) {
		return
	}
	h := b.hostOf(j)
	h.inflight--
	h.probeEnded()
	moved := false
	if g := h.gap; g > 0 && t+g > h.next {
		// Its interval runs from this end too: the fetch began before
		// its result came, so the site sees the next start at least
		// the interval after this one's, however late a job reaches
		// its worker.
		h.next = t + g
		moved = true
	}
	if moved || h.parked {
		b.refresh(h, t)
	}
}

// unlinkWorker takes a live worker out of dispatch: ready list, session map
// and capable counts. Its jobs and record stay.
func (b *Broker) unlinkWorker(w *worker, t int64) {
	if w.lost {
		return
	}
	if w.inReady {
		b.ready.remove(w)
	}
	if b.sessions[w.session] == w {
		delete(b.sessions, w.session)
	}
	if !w.draining {
		for _, c := range w.classes {
			c.loseWorker(b, t)
		}
	}
	b.gen++
}

// dropRecord forgets a worker record (live or lost) entirely.
func (b *Broker) dropRecord(w *worker) {
	if b.workers[w.id] == w {
		delete(b.workers, w.id)
	}
	if i := slices.Index(b.wsorted, w); i >= 0 {
		b.wsorted = slices.Delete(b.wsorted, i, i+1)
	}
	if w.lost {
		if i := slices.Index(b.lostOrder, w); i >= 0 {
			b.lostOrder = slices.Delete(b.lostOrder, i, i+1)
		}
	}
}

// requeueHeld requeues every job w holds; charged jobs lose one failure from
// their budget and may fail.
func (b *Broker) requeueHeld(w *worker, now time.Time, t int64, outcome string, charged bool) int {
	n := len(w.held)
	for len(w.held) > 0 {
		j := w.held[len(w.held)-1]
		b.release(j, t)
		if !charged {
			b.endAttempt(j, outcome, "")
			b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), URL: b.url(j), Worker: w.id, Detail: outcome})
			b.place(j, t, now)
			continue
		}
		b.countFailure(j)
		w.failures++
		b.failures++
		msg := "worker " + w.id + " lost"
		b.endAttempt(j, outcome, msg)
		b.setLastError(j, msg)
		if int(b.jobFailures(j)) >= b.cfg.MaxRequestFailures {
			b.fail(j, t, now, msg+" (failure "+strconv.Itoa(int(b.jobFailures(j)))+" of "+strconv.Itoa(b.cfg.MaxRequestFailures)+")")
			continue
		}
		d := b.retryLater(j, t, now)
		b.emit(admin.Event{At: now, Kind: admin.EventJobRequeued, JobID: uint64(j.id), URL: b.url(j), Worker: w.id, Detail: outcome + retryNote(d)})
	}
	return n
}

// Seen records a sign of life from session s (shown as LastHeartbeat).
func (b *Broker) Seen(now time.Time, s id.Session) {
	if w := b.sessions[s]; w != nil {
		w.seen = ns(now)
	}
}

// Lost handles a worker that died (missed heartbeats): every job it held is
// requeued and charged one failure, and may fail; its record stays as lost.
// An unknown session is ignored.
func (b *Broker) Lost(now time.Time, s id.Session) {
	w := b.sessions[s]
	if w == nil {
		return
	}
	t := ns(now)
	b.unlinkWorker(w, t)
	w.lost = true
	b.emit(admin.Event{At: now, Kind: admin.EventWorkerLost, Worker: w.id, Detail: strconv.Itoa(len(w.held)) + " jobs requeued"})
	b.requeueHeld(w, now, t, "lost", b.died(w, now, t))
	if b.cfg.LostWorkers == 0 {
		b.dropRecord(w)
		return
	}
	b.lostOrder = append(b.lostOrder, w)
	if len(b.lostOrder) > b.cfg.LostWorkers {
		b.dropRecord(b.lostOrder[0])
	}
}

// Left handles a clean DISCONNECT: the worker's jobs are requeued uncharged
// and its record is dropped. An unknown session is ignored.
func (b *Broker) Left(now time.Time, s id.Session) {
	w := b.sessions[s]
	if w == nil {
		return
	}
	b.leave(now, w, admin.EventWorkerLeft, "left")
}

// leave takes a live worker out of the broker (event kind), its jobs
// requeued uncharged (outcome), and drops its record. It returns how many
// jobs went back.
func (b *Broker) leave(now time.Time, w *worker, kind admin.EventKind, outcome string) int {
	t := ns(now)
	b.unlinkWorker(w, t)
	b.emit(admin.Event{At: now, Kind: kind, Worker: w.id})
	n := b.requeueHeld(w, now, t, outcome, false)
	b.dropRecord(w)
	return n
}

// Evict drops a worker on the operator's command: its jobs are requeued
// uncharged, and its session is closed (TakeClosed). Evicting a lost record
// just forgets it. It returns how many jobs went back.
func (b *Broker) Evict(now time.Time, workerID string) (int, error) {
	w := b.workers[workerID]
	if w == nil {
		return 0, fmt.Errorf("evict worker %q: %w", workerID, ErrUnknownWorker)
	}
	if w.lost {
		b.dropRecord(w)
		b.emit(admin.Event{At: now, Kind: admin.EventWorkerEvicted, Worker: w.id, Detail: "lost record"})
		return 0, nil
	}
	n := b.leave(now, w, admin.EventWorkerEvicted, "evicted")
	b.closed = append(b.closed, Closed{Session: w.session, Worker: w.id})
	return n, nil
}

// liveWorker is the registered, live worker an operator's action (op)
// names, or the error saying it is unknown or lost.
func (b *Broker) liveWorker(op, workerID string) (*worker, error) {
	w := b.workers[workerID]
	if w == nil {
		return nil, fmt.Errorf("%s worker %q: %w", op, workerID, ErrUnknownWorker)
	}
	if w.lost {
		return nil, fmt.Errorf("%s worker %q: %w: it is lost", op, workerID, ErrWrongState)
	}
	return w, nil
}

// Drain stops giving the worker new jobs; once it holds none it is closed
// (TakeClosed) and forgotten.
func (b *Broker) Drain(now time.Time, workerID string) error {
	w, err := b.liveWorker("drain", workerID)
	if err != nil {
		return err
	}
	if w.draining {
		return nil
	}
	t := ns(now)
	w.draining = true
	for _, c := range w.classes {
		c.loseWorker(b, t)
	}
	b.gen++
	b.syncReady(w)
	b.emit(admin.Event{At: now, Kind: admin.EventWorkerDraining, Worker: w.id})
	b.closeIfDrained(now, w)
	return nil
}

// Undrain lets a draining worker take jobs again.
func (b *Broker) Undrain(now time.Time, workerID string) error {
	w, err := b.liveWorker("undrain", workerID)
	if err != nil {
		return err
	}
	if !w.draining {
		return nil
	}
	w.draining = false
	for _, c := range w.classes {
		c.gainWorker(b)
	}
	b.gen++
	b.syncReady(w)
	b.emit(admin.Event{At: now, Kind: admin.EventWorkerUndrained, Worker: w.id})
	return nil
}

// closeIfDrained closes a draining worker that holds no job.
func (b *Broker) closeIfDrained(now time.Time, w *worker) {
	if !w.draining || len(w.held) > 0 {
		return
	}
	b.unlinkWorker(w, ns(now))
	b.dropRecord(w)
	b.closed = append(b.closed, Closed{Session: w.session, Worker: w.id, Drained: true})
	b.emit(admin.Event{At: now, Kind: admin.EventWorkerClosed, Worker: w.id, Detail: "drained"})
}
