// Package redisurl parses the store URL of a Redis Cluster store
// (store.url, serve --store redis://...): the configuration checks it
// (drover config check) and store/redis connects with it.
package redisurl

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"drover/internal/redact"
)

// Target is a parsed store URL: where the cluster's seed nodes are and
// how to log in. String never shows the password.
type Target struct {
	Addrs    []string // seed nodes, host:port; the rest of the topology is discovered
	TLS      bool     // rediss://: TLS to every node
	Username string   // ACL user, "" for the default user
	Password string   // "" for none
}

// Parse parses redis://[user:password@]HOST:PORT[,HOST:PORT...] or the
// same with rediss:// (TLS). The port defaults to 6379.
func Parse(raw string) (Target, error) {
	var t Target
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case !ok:
		return t, fmt.Errorf("store URL %q: want redis://HOST:PORT[,HOST:PORT...] or the same with rediss", shown(raw))
	case scheme == "redis":
	case scheme == "rediss":
		t.TLS = true
	default:
		return t, fmt.Errorf("store URL %q: scheme %q; want redis or rediss", shown(raw), scheme)
	}
	// The credentials end at the last '@' (hosts have none): a password
	// may hold '/', '?' or '#' unescaped, and no part of it is taken for
	// a path, nor shown in an error.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		info := rest[:at]
		rest = rest[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err error
		if t.Username, err = url.PathUnescape(user); err != nil {
			return Target{}, fmt.Errorf("store URL %q: user name: %w", shown(raw), err)
		}
		if hasPass {
			if t.Password, err = url.PathUnescape(pass); err != nil {
				return Target{}, fmt.Errorf("store URL %q: password is not validly escaped: %w", shown(raw), err)
			}
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		if strings.Trim(rest[i:], "/") != "" {
			return Target{}, fmt.Errorf("store URL %q: unexpected %q after the hosts; want redis://HOST:PORT[,HOST:PORT...] (cluster mode has no database number)", shown(raw), rest[i:])
		}
		rest = rest[:i]
	}
	for _, h := range strings.Split(rest, ",") {
		if h == "" {
			return Target{}, fmt.Errorf("store URL %q: empty host; want HOST:PORT[,HOST:PORT...]", shown(raw))
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, "6379"
			if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
				return Target{}, fmt.Errorf("store URL %q: host %q: %w", shown(raw), h, err)
			}
			host = strings.Trim(host, "[]")
		}
		if host == "" || port == "" {
			return Target{}, fmt.Errorf("store URL %q: host %q: want HOST:PORT", shown(raw), h)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return Target{}, fmt.Errorf("store URL %q: host %q: port %q; want a number from 1 to 65535", shown(raw), h, port)
		}
		t.Addrs = append(t.Addrs, net.JoinHostPort(host, port))
	}
	return t, nil
}

// String is the URL with the password replaced by "xxxxx".
func (t Target) String() string {
	var b strings.Builder
	b.WriteString("redis")
	if t.TLS {
		b.WriteString("s")
	}
	b.WriteString("://")
	if t.Username != "" || t.Password != "" {
		b.WriteString(url.PathEscape(t.Username))
		if t.Password != "" {
			b.WriteString(":xxxxx")
		}
		b.WriteString("@")
	}
	b.WriteString(strings.Join(t.Addrs, ","))
	return b.String()
}

// TLSConfig is the TLS configuration of a rediss:// target (nil for
// redis://): the system's roots, TLS 1.2 at least.
func (t Target) TLSConfig() *tls.Config {
	if !t.TLS {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// shown is a URL that did not parse as errors show it: its password
// hidden.
func shown(raw string) string {
	s, _ := redact.URLPassword(raw, "xxxxx")
	return s
}
