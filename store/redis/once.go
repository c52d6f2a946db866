package redis

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// Calls that take or count (a claim leases jobs, a push queues them, a
// finish adds to the cluster's totals) must run at most once. The cluster
// client sends a node's pipeline again, whole, when the node's reply was
// cut (EOF, reset, read timeout): the scripts already ran, those answered
// before the cut included, and running a claim again leases jobs that no
// one hears of. A context made by once marks such a call, and sendOnce,
// a hook on every node's client (newClusterClient), lets the client send
// one of its commands again only if Redis answered that it did not run it
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN; not a script's
// own error, which may come after the script wrote). A command whose answer was lost keeps its error,
// which reaches the caller's recovery (a claim's unsure hosts, freed by
// forget; a finish or a count sent again by the next Tick); one answered
// keeps its answer.

type sentKey struct{}

// sentSet is the commands of one call that were handed to a node.
type sentSet struct {
	mu sync.Mutex
	m  map[goredis.Cmder]bool
}

// once marks ctx's commands to be sent at most once (see above).
func once(ctx context.Context) context.Context {
	return context.WithValue(ctx, sentKey{}, &sentSet{m: make(map[goredis.Cmder]bool)})
}

// send reports whether cmd may go to a node now: it was never sent, or
// Redis refused it without running it.
func (s *sentSet) send(cmd goredis.Cmder) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.m[cmd] {
		s.m[cmd] = true
		return true
	}
	var reply goredis.Error
	if !errors.As(cmd.Err(), &reply) {
		return false // cut or failed on the connection: it may have run
	}
	return notRun(reply.Error())
}

// notRun reports whether an error reply says Redis did not run the
// command: a redirection or a node not ready. Any other error reply (a
// script's own error) may come after the script wrote.
func notRun(reply string) bool {
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN"} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}

// sendOnce is the hook that keeps a node's client from sending a command
// of a call marked by once twice.
type sendOnce struct{}

func (sendOnce) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (sendOnce) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if s, ok := ctx.Value(sentKey{}).(*sentSet); ok && !s.send(cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (sendOnce) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		cmds = fromRound(ctx, cmds) // a cluster pipeline's first round only (pipe.go)
		s, ok := ctx.Value(sentKey{}).(*sentSet)
		if !ok {
			return next(ctx, cmds)
		}
		send := make([]goredis.Cmder, 0, len(cmds))
		for _, c := range cmds {
			if s.send(c) {
				send = append(send, c)
			}
		}
		if len(send) > 0 {
			return next(ctx, send)
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// newClusterClient is a cluster client whose nodes' clients send the
// commands of a call marked by once at most once, and whose pipelines
// send a command again alone, never in go-redis's pipeline rounds
// (pipe.go). A node it cannot dial makes it read the cluster's topology
// again (reloadOnDialError).
func newClusterClient(opts *goredis.ClusterOptions) *goredis.ClusterClient {
	o := *opts
	var cluster atomic.Pointer[goredis.ClusterClient]
	newClient := o.NewClient
	o.NewClient = func(no *goredis.Options) *goredis.Client {
		var c *goredis.Client
		if newClient != nil {
			c = newClient(no)
		} else {
			c = goredis.NewClient(no)
		}
		c.AddHook(sendOnce{})
		c.AddHook(reloadOnDialError{&cluster})
		return c
	}
	c := goredis.NewClusterClient(&o)
	cluster.Store(c)
	c.AddHook(pipeRounds{c})
	return c
}

// reloadOnDialError is the hook that makes the cluster client read the
// topology again (CLUSTER SLOTS, at most one read at a time) when a
// node's client cannot dial it. The client learns of a new master from a
// MOVED only, and a call to a master that is gone (killed, its replica
// promoted) ends in a dial error, never a MOVED; a call marked by once is
// not sent elsewhere either. Without this the client would send a failed
// over shard's calls to the dead master until its periodic reload, a
// minute after the last.
type reloadOnDialError struct {
	cluster *atomic.Pointer[goredis.ClusterClient]
}

func (h reloadOnDialError) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			if c := h.cluster.Load(); c != nil {
				c.ReloadState(ctx)
			}
		}
		return conn, err
	}
}

func (reloadOnDialError) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (reloadOnDialError) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
