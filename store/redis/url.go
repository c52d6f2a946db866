package redis

import "drover/internal/redisurl"

// Target is a parsed store URL (redisurl.Parse): where the cluster's seed
// nodes are and how to log in. String never shows the password.
type Target = redisurl.Target
