package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// expected describes, for a type error, what a value of the key's kind
// looks like.
func expected(k Key) string {
	switch k.Kind {
	case KindString:
		return "a string"
	case KindEnum:
		return "one of " + strings.Join(k.Choices, ", ")
	case KindBool:
		return "true or false"
	case KindInt:
		return "an integer"
	case KindFloat:
		return "a number"
	case KindDuration:
		return "a duration with a unit, such as 1s, 250ms or 1h30m"
	case KindSize:
		return "a size in bytes, such as 512, 64KiB, 10MiB or 1GB"
	case KindEndpoint:
		return "a ZeroMQ endpoint tcp://HOST:PORT, ipc://PATH or inproc://NAME"
	case KindHostPort:
		return "HOST:PORT with a port from 0 to 65535, or empty to disable"
	case KindURL:
		return "an http:// or https:// URL with a host, or empty to disable"
	case KindStringMap:
		return "a mapping of names to strings (name=value,name=value in the environment and flags)"
	}
	return k.Kind.String()
}

// parseText parses a value given as text (an environment variable or a
// flag) into the Go type of the key's kind. ok is false when the text is
// not a value of the kind at all.
func parseText(k Key, s string) (v any, ok bool) {
	switch k.Kind {
	case KindString, KindEnum, KindEndpoint, KindHostPort, KindURL:
		// The syntax of endpoints and URLs is checked by checkValue,
		// which names what is wrong with them.
		return s, true
	case KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		return b, err == nil
	case KindInt:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		return n, err == nil
	case KindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case KindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		return d, err == nil
	case KindSize:
		n, err := ParseSize(s)
		return n, err == nil
	case KindStringMap:
		m, err := parseMapText(s)
		return m, err == nil
	}
	return nil, false
}

// coerce converts a value decoded from a config file (YAML, TOML or JSON
// types) into the Go type of the key's kind.
func coerce(k Key, raw any) (v any, ok bool) {
	if s, isStr := raw.(string); isStr && k.Kind != KindStringMap {
		return parseText(k, s)
	}
	switch k.Kind {
	case KindString, KindURL, KindHostPort:
		if raw == nil { // "key:" with nothing after it
			return "", true
		}
		return nil, false
	case KindBool:
		b, ok := raw.(bool)
		return b, ok
	case KindInt:
		n, ok := asInt(raw)
		if !ok || n < math.MinInt || n > math.MaxInt {
			return nil, false
		}
		return int(n), true
	case KindFloat:
		switch x := raw.(type) {
		case float64:
			return x, !math.IsNaN(x) && !math.IsInf(x, 0)
		case float32:
			return float64(x), true
		}
		n, ok := asInt(raw)
		return float64(n), ok
	case KindDuration:
		// Only a bare 0 is unambiguous without a unit.
		if n, ok := asInt(raw); ok && n == 0 {
			return time.Duration(0), true
		}
		return nil, false
	case KindSize:
		n, ok := asInt(raw)
		return n, ok && n >= 0
	case KindStringMap:
		return coerceMap(raw)
	}
	return nil, false
}

// asInt accepts the integer types decoders produce, and floats with no
// fractional part (JSON numbers are float64).
func asInt(raw any) (int64, bool) {
	switch x := raw.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || x < math.MinInt64 || x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

func coerceMap(raw any) (any, bool) {
	out := map[string]string{}
	switch m := raw.(type) {
	case nil:
		return out, true
	case map[string]any:
		for name, val := range m {
			s, ok := scalarText(val)
			if !ok {
				return nil, false
			}
			out[name] = s
		}
		return out, true
	case map[string]string:
		for name, val := range m {
			out[name] = val
		}
		return out, true
	case string:
		mm, err := parseMapText(m)
		return mm, err == nil
	}
	return nil, false
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	}
	if n, ok := asInt(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// parseMapText parses name=value,name=value.
func parseMapText(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, found := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !found || name == "" {
			return nil, fmt.Errorf("%q is not name=value", part)
		}
		out[name] = strings.TrimSpace(val)
	}
	return out, nil
}

// formatText renders a value as text that parseText reads back to the
// same value.
func formatText(k Key, v any) string {
	switch k.Kind {
	case KindDuration:
		return FormatDuration(v.(time.Duration))
	case KindSize:
		return FormatSize(v.(int64))
	case KindFloat:
		return strconv.FormatFloat(v.(float64), 'g', -1, 64)
	case KindStringMap:
		m := v.(map[string]string)
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = n + "=" + m[n]
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// FormatDuration writes d as time.Duration.String does, without the
// trailing zero units: 1m instead of 1m0s, 24h instead of 24h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var sizeUnits = []struct {
	name string
	mult int64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3}, {"b", 1},
}

// ParseSize reads a byte count: an integer with an optional unit, B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024),
// case-insensitive.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.name) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.name))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: expected a non-negative integer with an optional unit (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: larger than %d bytes", s, int64(math.MaxInt64))
	}
	return n * mult, nil
}

// FormatSize writes n bytes with the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkEndpoint validates a ZeroMQ bind endpoint.
func checkEndpoint(s string) error {
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		return fmt.Errorf("no scheme")
	}
	switch scheme {
	case "tcp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			return err
		}
		if host == "" {
			return fmt.Errorf("no host")
		}
		return checkPort(port, true)
	case "ipc", "inproc":
		if rest == "" {
			return fmt.Errorf("empty %s name", scheme)
		}
		return nil
	}
	return fmt.Errorf("scheme %q", scheme)
}

func checkPort(port string, zmqWildcard bool) error {
	if zmqWildcard && port == "*" {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q", port)
	}
	return nil
}

// checkHostPort validates an HTTP listen address; empty is valid.
func checkHostPort(s string) error {
	if s == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	return checkPort(port, false)
}

// checkURL validates an http(s) URL; empty is valid.
func checkURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an absolute http(s) URL")
	}
	return nil
}

// listenAddr is where a listener binds, for conflict checks.
type listenAddr struct {
	host string // "*" for every interface; the scheme for ipc and inproc
	port string // the path or name for ipc and inproc
}

// collides reports whether two listeners cannot both bind.
func (a listenAddr) collides(b listenAddr) bool {
	if a.port != b.port {
		return false
	}
	if a.host == b.host {
		return true
	}
	isIP := func(h string) bool { return h != "ipc" && h != "inproc" }
	return isIP(a.host) && isIP(b.host) && (a.host == "*" || b.host == "*")
}

// listenOf returns where a listen address binds, and false when it binds
// nothing or an ephemeral port (two of those never collide).
// tcp://HOST:PORT and HOST:PORT bind the same place.
func listenOf(kind Kind, s string) (listenAddr, bool) {
	if s == "" {
		return listenAddr{}, false
	}
	hostport := s
	if kind == KindEndpoint {
		scheme, rest, _ := strings.Cut(s, "://")
		if scheme != "tcp" {
			return listenAddr{host: scheme, port: rest}, true
		}
		hostport = rest
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port == "*" || port == "0" {
		return listenAddr{}, false
	}
	switch strings.ToLower(host) {
	case "*", "0.0.0.0", "::", "":
		host = "*"
	case "localhost":
		host = "127.0.0.1"
	}
	return listenAddr{host: strings.ToLower(host), port: port}, true
}
