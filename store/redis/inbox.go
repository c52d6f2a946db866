package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
)

// inbox holds the answers other coordinators publish for this one's
// waiting sessions, and the waits they may answer. The subscription's
// goroutine only appends under the mutex; everything else runs on the
// ledger's owner.
type inbox struct {
	ps     *goredis.PubSub
	done   chan struct{}
	mu     sync.Mutex
	got    []ledger.Answer
	bad    int                   // messages that did not parse
	waits  map[waitKey]waitEntry // guarded by the ledger's owner, not mu
	parse  func(string) (ledger.Answer, bool)
	closed bool
}

type waitKey struct {
	owner string
	fp    id.Fingerprint
}

type waitEntry struct {
	host string
	req  uint64
	s    id.Session
}

func newInbox(ctx context.Context, rdb goredis.UniversalClient, channel string, parse func(string) (ledger.Answer, bool)) (*inbox, error) {
	ps := rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil { // the subscription confirmed
		ps.Close()
		return nil, err
	}
	b := &inbox{ps: ps, done: make(chan struct{}), waits: make(map[waitKey]waitEntry), parse: parse}
	go b.run()
	return b, nil
}

func (b *inbox) run() {
	defer close(b.done)
	for m := range b.ps.Channel() {
		a, ok := b.parse(m.Payload)
		b.mu.Lock()
		if ok {
			b.got = append(b.got, a)
		} else {
			b.bad++
		}
		b.mu.Unlock()
	}
}

func (b *inbox) close() {
	if b.closed {
		return
	}
	b.closed = true
	b.ps.Close()
	<-b.done
}

func (b *inbox) wait(owner string, fp id.Fingerprint, host string, req uint64, s id.Session) {
	b.waits[waitKey{owner, fp}] = waitEntry{host, req, s}
}

func (b *inbox) settle(owner string, fp id.Fingerprint) { delete(b.waits, waitKey{owner, fp}) }

func (b *inbox) release(owner string) {
	for k := range b.waits {
		if k.owner == owner {
			delete(b.waits, k)
		}
	}
}

// take returns the received answers that still answer a wait (an answer
// the poll already gave, or for a released session, is dropped).
func (b *inbox) take(owner func(id.Session) string) []ledger.Answer {
	b.mu.Lock()
	got := b.got
	b.got = nil
	b.mu.Unlock()
	out := got[:0]
	for _, a := range got {
		k := waitKey{owner(a.Session), a.FP}
		if _, ok := b.waits[k]; ok {
			delete(b.waits, k)
			out = append(out, a)
		}
	}
	return out
}

// formatAnswer is the message that carries an answer to another
// coordinator: OWNER|REQID|FP|VERDICT|REASON.
func formatAnswer(owner string, a ledger.Answer) string {
	return owner + "|" + strconv.FormatUint(a.ReqID, 10) + "|" + a.FP.String() + "|" + a.Verdict.String() + "|" + string(a.Reason)
}

// parseAnswer reads formatAnswer's message for a session of this
// coordinator.
func (l *Ledger) parseAnswer(msg string) (ledger.Answer, bool) {
	f := strings.Split(msg, "|")
	if len(f) != 5 {
		return ledger.Answer{}, false
	}
	s := l.session(f[0])
	req, err1 := strconv.ParseUint(f[1], 10, 64)
	fp, err2 := id.ParseFingerprint(f[2])
	v := parseVerdict(f[3])
	if s == 0 || err1 != nil || err2 != nil || (v != ledger.OK && v != ledger.No) {
		return ledger.Answer{}, false
	}
	return ledger.Answer{Session: s, ReqID: req, FP: fp, Verdict: v, Reason: ledger.Reason(f[4])}, true
}
