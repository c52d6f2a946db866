package redis

import (
	"context"
	"errors"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// A cluster pipeline's commands are sent again one at a time, never by
// the cluster client's own pipeline retries. Those retries (go-redis
// v9.23.0) can queue one command for two nodes in the same round: when a
// node's first reply is a retryable error (TRYAGAIN while a slot
// migrates) after a later command of the batch was MOVED, the whole batch
// is queued again beside the moved command, whose new node may differ
// from the one the stale slot map still names. Two goroutines then read
// replies into the same command (a data race) or one node runs it twice.
//
// pipeRounds, a hook on the cluster client, marks each pipeline's
// context; sendOnce's pipeline hook on every node's client sends a
// command of a marked pipeline only the first time (a later round of
// go-redis's loop sends a PING in place of the batch). When the pipeline
// returns, pipeRounds sends each command that Redis did not run (MOVED,
// ASK, TRYAGAIN, …) or whose reply a connection lost through the cluster
// client's single-command path, which follows redirections itself and
// runs no goroutine per node; a call marked by once still goes at most
// once (once.go).

type roundKey struct{}

// pipeRound is the commands of one cluster pipeline handed to a node.
type pipeRound struct {
	mu   sync.Mutex
	sent map[goredis.Cmder]bool
}

// first returns the commands of cmds never handed to a node before,
// without ASKING (it belongs to a command sent again, which goes alone
// later), and marks them.
func (r *pipeRound) first(cmds []goredis.Cmder) []goredis.Cmder {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]goredis.Cmder, 0, len(cmds))
	for _, c := range cmds {
		if r.sent[c] || strings.EqualFold(c.Name(), "asking") {
			continue
		}
		r.sent[c] = true
		out = append(out, c)
	}
	return out
}

// pipeRounds is the cluster client's hook that sends a pipeline's
// commands again alone (see above).
type pipeRounds struct{ rdb *goredis.ClusterClient }

func (pipeRounds) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (pipeRounds) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (p pipeRounds) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r := &pipeRound{sent: make(map[goredis.Cmder]bool, len(cmds))}
		_ = next(context.WithValue(ctx, roundKey{}, r), cmds)
		for _, c := range cmds {
			if ctx.Err() != nil {
				break
			}
			if r.sendAgain(c) {
				_ = p.rdb.Process(ctx, c)
			}
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// sendAgain reports whether c, a command of r's pipeline, is sent again:
// Redis answered that it did not run it, or a node had it and no answer
// came (a cut or timed-out connection, which go-redis's own rounds would
// have sent again; once.go keeps a marked call from running twice). A
// script's own error and goredis.Nil are answers; an error from before
// any node had it (a hook's) is the caller's.
func (r *pipeRound) sendAgain(c goredis.Cmder) bool {
	err := c.Err()
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply goredis.Error
	if errors.As(err, &reply) {
		return notRun(reply.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[c]
}

// fromRound returns the commands of cmds a node may send now: all of
// them unless ctx is a cluster pipeline's, whose commands go only in
// its first round. A node's call needs a command: PING stands in when
// every one was sent before.
func fromRound(ctx context.Context, cmds []goredis.Cmder) []goredis.Cmder {
	r, ok := ctx.Value(roundKey{}).(*pipeRound)
	if !ok {
		return cmds
	}
	send := r.first(cmds)
	if len(send) == 0 {
		send = append(send, goredis.NewStatusCmd(ctx, "ping"))
	}
	return send
}
