package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// connect opens a cluster client on t's seed nodes (a plain client when
// the one seed is a Redis without cluster support) and checks it answers.
// Neither sends again a command of a call that must run at most once
// (once.go).
func connect(ctx context.Context, t Target) (goredis.UniversalClient, error) {
	opts := &goredis.ClusterOptions{
		Addrs:        t.Addrs,
		Username:     t.Username,
		Password:     t.Password,
		TLSConfig:    t.TLSConfig(),
		DialTimeout:  5 * time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		MaxRedirects: 8,
	}
	var rdb goredis.UniversalClient = newClusterClient(opts)
	err := rdb.Ping(ctx).Err()
	if err != nil && len(t.Addrs) == 1 && strings.Contains(err.Error(), "cluster support disabled") {
		rdb.Close()
		rdb = goredis.NewClient(&goredis.Options{
			Addr: t.Addrs[0], Username: t.Username, Password: t.Password, TLSConfig: t.TLSConfig(),
			DialTimeout: opts.DialTimeout, ReadTimeout: opts.ReadTimeout, WriteTimeout: opts.WriteTimeout,
			// Its retries are outside any hook (once.go): none, so a
			// claim or a count whose answer was lost is not run twice.
			MaxRetries: -1,
		})
		err = rdb.Ping(ctx).Err()
	}
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis store %s: %w", t, err)
	}
	return rdb, nil
}

// LogTo sends the Redis client's own messages (a node it failed to dial
// after its retries, a pool's hook that failed) to log as warnings, in
// the process's log format, instead of standard error in the log
// package's. It applies to every client of the process.
func LogTo(log *slog.Logger) { goredis.SetLogger(clientLog{log}) }

// clientLog is the Redis client's logger writing to a slog.Logger.
type clientLog struct{ log *slog.Logger }

func (c clientLog) Printf(ctx context.Context, format string, v ...any) {
	c.log.WarnContext(ctx, "redis client: "+strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
}
