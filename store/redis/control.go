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

// Actions across coordinators (an operator's requeue, on any coordinator,
// of a job another one holds): the coordinator asked posts the action to
// the holder's control list PREFIX:coord:C:ctl (RPUSH) and waits for the
// answer on a reply list of its own (BLPOP, bounded by Config.Timeout);
// the holder's server reads its control list (BLPOP), carries each action
// out on its reactor and pushes the answer (LPUSH, the list expiring a
// minute later, so an answer nobody waits for does not stay). The lists
// are a transport only: what the action does is the holder's to decide
// (a job it no longer holds is answered as such), and a holder that died
// holding the job has its jobs returned to the queue by the sweep.

// controlMax bounds the actions Requests hands over at once.
const controlMax = 64

func (l *Ledger) controlKey(c string) string { return l.cfg.Prefix + ":coord:" + c + ":ctl" }

// control is one action posted to a coordinator.
type control struct {
	Action admin.Action `json:"a"`
	From   string       `json:"f"` // the coordinator that asked
	Reply  string       `json:"r"` // the list its answer goes to
}

// Ask posts action a to coordinator c and waits, up to the store's
// timeout, for its answer.
func (v *JobView) Ask(c string, a admin.Action) (admin.ActionResult, error) {
	l := v.l
	var tag [12]byte
	_, _ = rand.Read(tag[:])
	wait := l.cfg.Timeout
	req := control{Action: a, From: l.coord, Reply: l.cfg.Prefix + ":ctl:reply:" + hex.EncodeToString(tag[:])}
	b, err := json.Marshal(&req)
	if err != nil {
		return admin.ActionResult{}, fmt.Errorf("redis control: encoding the action: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	key := l.controlKey(c)
	pipe := l.rdb.Pipeline()
	pipe.RPush(ctx, key, b)
	pipe.Expire(ctx, key, forgetSummary)
	if _, err := pipe.Exec(ctx); err != nil {
		return admin.ActionResult{}, fmt.Errorf("redis control: posting %s to coordinator %s: %w", a.Kind, c, err)
	}
	got, err := l.rdb.BLPop(ctx, wait, req.Reply).Result()
	if errors.Is(err, goredis.Nil) {
		return admin.ActionResult{}, fmt.Errorf("redis control: coordinator %s did not answer %s within %v (it may still carry it out)", c, a.Kind, wait)
	}
	if err != nil {
		return admin.ActionResult{}, fmt.Errorf("redis control: waiting for coordinator %s's answer to %s: %w", c, a.Kind, err)
	}
	var res admin.ActionResult
	if err := json.Unmarshal([]byte(got[1]), &res); err != nil {
		return admin.ActionResult{}, fmt.Errorf("redis control: coordinator %s's answer to %s: %w", c, a.Kind, err)
	}
	return res, nil
}

// Requests waits up to wait (bounded by ctx) for actions posted to this
// coordinator, and returns those read (at most controlMax) with the reply
// each answer goes to (Reply). An action whose asker stopped waiting is
// still carried out (its answer expires unread).
func (v *JobView) Requests(ctx context.Context, wait time.Duration) (acts []admin.Action, replies []string, err error) {
	l := v.l
	key := l.controlKey(l.coord)
	got, err := l.rdb.BLPop(ctx, wait, key).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("redis control: reading this coordinator's actions: %w", err)
	}
	raw := []string{got[1]}
	if more, err := l.rdb.LPopCount(ctx, key, controlMax-1).Result(); err == nil {
		raw = append(raw, more...)
	}
	for _, s := range raw {
		var c control
		if json.Unmarshal([]byte(s), &c) != nil || c.Reply == "" {
			continue
		}
		acts = append(acts, c.Action)
		replies = append(replies, c.Reply)
	}
	return acts, replies, nil
}

// Reply sends the answer to an action Requests read.
func (v *JobView) Reply(reply string, res admin.ActionResult) error {
	l := v.l
	b, err := json.Marshal(&res)
	if err != nil {
		return fmt.Errorf("redis control: encoding the answer: %w", err)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	pipe := l.rdb.Pipeline()
	pipe.LPush(ctx, reply, b)
	pipe.Expire(ctx, reply, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis control: answering: %w", err)
	}
	return nil
}
