package redis

import "drover/internal/redisurl"

// Target is a parsed store URL: where the cluster's seed nodes are and
// how to log in. String never shows the password.
type Target = redisurl.Target

// ParseURL parses redis://[user:password@]HOST:PORT[,HOST:PORT...] or the
// same with rediss:// (TLS). The port defaults to 6379.
func ParseURL(raw string) (Target, error) { return redisurl.Parse(raw) }
