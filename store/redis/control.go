package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
)

// Actions across coordinators (an operator's requeue, evict, drain or
// undrain, on any coordinator, of a job another one holds or a worker
// connected to another): the coordinator asked posts the action to the
// holder's control list PREFIX:{ctl:C} (RPUSH) and waits for the answer
// on a reply list of its own (BLPOP, bounded by Config.Timeout). The
// holder reads its list as a reliable queue: each action is moved
// (BLMOVE) into its processing list PREFIX:{ctl:C}:doing, carried out on
// its reactor, answered (LPUSH to the reply list, which expires a minute
// later, so an answer nobody waits for does not stay) and only then
// removed from the processing list (LREM), so an action is not lost when
// its holder stops between reading and acting: a reader started again
// reads the processing list first. A holder that stops for good (a clean
// stop, Leave; or dead, and swept by a peer, sweepCoordinator) settles
// what is left in both lists (settleControls): an evict, drain or
// undrain of a worker that is now connected to another live coordinator
// (its summary lists the worker: workers reconnect) is forwarded to that
// coordinator's list, with the same reply list, and answered there; the
// rest is answered as not done, saying why (its jobs went back to the
// queue, its workers' sessions ended, the worker is on no live
// coordinator), and the lists are deleted: never dropped silently. An
// answer says how many of the action's targets it covers, so the asker
// waits for the answers of every part of an action split by a forward.
// The lists are a transport only: what the action does is the holder's
// to decide (a job it no longer holds is answered as such).

// controlMax bounds the actions Requests hands over at once.
const controlMax = 64

// controlKeep is how long a control list outlives its last post or read:
// a safety net for a coordinator that is neither alive nor swept.
const controlKeep = 10 * time.Minute

// The two lists share the hash tag {ctl:C}, so BLMOVE stays in one slot.
func (l *Ledger) controlKey(c string) string { return l.cfg.Prefix + ":{ctl:" + c + "}" }
func (l *Ledger) doingKey(c string) string   { return l.cfg.Prefix + ":{ctl:" + c + "}:doing" }

// control is one action posted to a coordinator.
type control struct {
	Action admin.Action `json:"a"`
	From   string       `json:"f"` // the coordinator that asked
	Reply  string       `json:"r"` // the list its answer goes to
	At     time.Time    `json:"t"` // when it was posted
	// Via lists the coordinators that stopped or died with it, each
	// forwarding it on (settleControls).
	Via []string `json:"v,omitempty"`
}

// answerMsg is an answer on a reply list: the result for Covers of the
// action's targets (0: all of them). By is the coordinator that carried
// it out, whose lines the asker prefixes with "on coordinator By: "; ""
// for the answer of a coordinator that stopped before (its lines name
// it).
type answerMsg struct {
	admin.ActionResult
	By     string `json:"by,omitempty"`
	Covers int    `json:"covers,omitempty"`
}

// Ask posts action a to coordinator c and waits, up to the store's
// timeout, for its answer.
func (v *JobView) Ask(c string, a admin.Action) (admin.ActionResult, error) {
	reply, err := v.post(c, a)
	if err != nil {
		return admin.ActionResult{}, err
	}
	return v.await(c, a, reply, v.l.cfg.Timeout)
}

// post puts action a on coordinator c's control list and returns the
// list its answer will come to.
func (v *JobView) post(c string, a admin.Action) (string, error) {
	l := v.l
	var tag [12]byte
	_, _ = rand.Read(tag[:])
	req := control{Action: a, From: l.coord, Reply: l.cfg.Prefix + ":ctl:reply:" + hex.EncodeToString(tag[:]), At: l.cfg.Clock.Now()}
	b, err := json.Marshal(&req)
	if err != nil {
		return "", fmt.Errorf("redis control: encoding the action: %w", err)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	key := l.controlKey(c)
	pipe := l.rdb.Pipeline()
	pipe.RPush(ctx, key, b)
	pipe.Expire(ctx, key, controlKeep)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", fmt.Errorf("redis control: posting %s to coordinator %s: %w", a.Kind, c, err)
	}
	return req.Reply, nil
}

// await waits up to wait for the answers to action a posted to c, until
// they cover every target (a coordinator that stopped may have forwarded
// some targets and answered the others: settleControls). The lines of
// each coordinator that carried it out come prefixed "on coordinator C: ".
func (v *JobView) await(c string, a admin.Action, reply string, wait time.Duration) (admin.ActionResult, error) {
	deadline := time.Now().Add(wait)
	want := max(1, len(a.Targets))
	var res admin.ActionResult
	covered, answers := 0, 0
	for covered < want {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*left)
		got, err := v.l.rdb.BLPop(ctx, left, reply).Result()
		cancel()
		if errors.Is(err, goredis.Nil) {
			break
		}
		if err != nil {
			return admin.ActionResult{}, fmt.Errorf("redis control: waiting for coordinator %s's answer to %s: %w", c, a.Kind, err)
		}
		var m answerMsg
		if err := json.Unmarshal([]byte(got[1]), &m); err != nil {
			return admin.ActionResult{}, fmt.Errorf("redis control: coordinator %s's answer to %s: %w", c, a.Kind, err)
		}
		answers++
		covered += m.Covers
		if m.Covers == 0 {
			covered = want
		}
		res.Affected += m.Affected
		for _, e := range m.Errors {
			if m.By != "" {
				e = "on coordinator " + m.By + ": " + e
			}
			res.Errors = append(res.Errors, e)
		}
	}
	if answers == 0 {
		return admin.ActionResult{}, fmt.Errorf("redis control: coordinator %s did not answer %s within %v (it may still carry it out)", c, a.Kind, wait)
	}
	if covered < want {
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %d of its %d targets not answered within %v: coordinator %s stopped and forwarded them to the coordinators they moved to, which may still carry them out", a.Kind, want-covered, want, wait, c))
	}
	return res, nil
}

// moveMore moves up to ARGV[1] more actions from the control list
// (KEYS[1]) to the processing list (KEYS[2]) and returns them.
var moveMore = goredis.NewScript(`
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local v = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not v then break end
  out[#out + 1] = v
end
return out
`)

// Requests waits up to wait (bounded by ctx) for actions posted to this
// coordinator, moves those it reads (at most controlMax) to its
// processing list, and returns them with their tickets, each to be given
// to Reply once the action is carried out. Its first call reads the
// processing list instead (actions read before and not answered: a
// reader stopped between reading and acting). An action whose asker
// stopped waiting is still carried out (its answer expires unread).
func (v *JobView) Requests(ctx context.Context, wait time.Duration) (acts []admin.Action, tickets []string, err error) {
	l := v.l
	key, doing := l.controlKey(l.coord), l.doingKey(l.coord)
	var raw []string
	if !v.reread.Load() {
		if raw, err = l.rdb.LRange(ctx, doing, 0, controlMax-1).Result(); err != nil {
			return nil, nil, fmt.Errorf("redis control: reading the actions this coordinator read and did not answer: %w", err)
		}
		v.reread.Store(true)
	}
	if len(raw) == 0 {
		got, err := l.rdb.BLMove(ctx, key, doing, "LEFT", "RIGHT", wait).Result()
		if errors.Is(err, goredis.Nil) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("redis control: reading this coordinator's actions: %w", err)
		}
		raw = []string{got}
		if more, err := moveMore.Run(ctx, l.rdb, []string{key, doing}, controlMax-1).StringSlice(); err == nil {
			raw = append(raw, more...)
		}
		l.rdb.Expire(ctx, doing, controlKeep)
	}
	for _, s := range raw {
		var c control
		if json.Unmarshal([]byte(s), &c) != nil || c.Reply == "" {
			l.rdb.LRem(ctx, doing, 1, s) // not an action: nothing to answer
			continue
		}
		acts = append(acts, c.Action)
		tickets = append(tickets, s)
	}
	return acts, tickets, nil
}

// Reply sends the answer to an action Requests read (ticket is its
// ticket), then removes it from the processing list.
func (v *JobView) Reply(ticket string, res admin.ActionResult) error {
	l := v.l
	var c control
	if err := json.Unmarshal([]byte(ticket), &c); err != nil {
		return fmt.Errorf("redis control: answering: the ticket is not an action Requests read: %w", err)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	if err := l.answer(ctx, c.Reply, answerMsg{ActionResult: res, By: l.coord, Covers: len(c.Action.Targets)}); err != nil {
		return err
	}
	if err := l.rdb.LRem(ctx, l.doingKey(l.coord), 1, ticket).Err(); err != nil {
		return fmt.Errorf("redis control: removing the %s answered from this coordinator's processing list: %w", c.Action.Kind, err)
	}
	return nil
}

// answer pushes m to reply list r.
func (l *Ledger) answer(ctx context.Context, r string, m answerMsg) error {
	b, err := json.Marshal(&m)
	if err != nil {
		return fmt.Errorf("redis control: encoding the answer: %w", err)
	}
	pipe := l.rdb.Pipeline()
	pipe.LPush(ctx, r, b)
	pipe.Expire(ctx, r, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis control: answering: %w", err)
	}
	return nil
}
