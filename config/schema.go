// Package config is drover's configuration: one schema listing every key
// (dotted name, type, default, description, validation rule), loaded with
// viper from flags, environment, a config file and the defaults, in that
// order of precedence, and validated strictly before anything starts.
//
// The schema is the single source for the defaults, the environment and
// flag bindings, `drover config show`, the reference documentation and the
// generated example file (drover.example.yaml).
package config

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Kind is the type of a configuration key's value.
type Kind int

// The kinds of value a key may hold, with the Go type each has in Config.
const (
	KindString    Kind = iota + 1 // string
	KindEnum                      // string, one of Key.Choices
	KindBool                      // bool
	KindInt                       // int
	KindFloat                     // float64
	KindDuration                  // time.Duration, written 1s, 250ms, 1h30m
	KindSize                      // int64 bytes, written 512, 64KiB, 10MiB, 1GB
	KindEndpoint                  // string, a ZeroMQ endpoint tcp://HOST:PORT, ipc://PATH, inproc://NAME
	KindHostPort                  // string, HOST:PORT for an HTTP listener; empty disables
	KindURL                       // string, an http or https URL; empty disables
	KindStringMap                 // map[string]string
)

// String names the kind as flags and documentation show it.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindEnum:
		return "enum"
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindDuration:
		return "duration"
	case KindSize:
		return "size"
	case KindEndpoint:
		return "endpoint"
	case KindHostPort:
		return "host:port"
	case KindURL:
		return "url"
	case KindStringMap:
		return "map"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Key describes one configuration key.
type Key struct {
	Name    string   // dotted, lower case: heartbeat.interval
	Kind    Kind     // the value's type
	Default any      // typed as Kind says (time.Duration for KindDuration, ...)
	Help    string   // one line
	Rule    string   // what a valid value is, in words; empty when any value of the kind is valid
	Choices []string // the allowed values of a KindEnum
	// Secret marks a key whose value may be a secret: `drover config show`
	// and logs never print it (Redacted).
	Secret bool
	// ok reports whether a parsed value satisfies Rule; nil accepts all.
	ok func(v any) bool
}

// Env is the environment variable that sets the key:
// DROVER_ followed by the upper-cased name with "." replaced by "_".
func (k Key) Env() string { return EnvName(k.Name) }

// Flag is the canonical command-line flag name (without dashes) bound to
// the key: the name with "." and "_" replaced by "-".
func (k Key) Flag() string { return FlagName(k.Name) }

// EnvPrefix starts every environment variable drover reads.
const EnvPrefix = "DROVER_"

// EnvConfig names the config file when no --config flag is given.
const EnvConfig = "DROVER_CONFIG"

// EnvName returns the environment variable bound to the key name.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// FlagName returns the canonical flag name (without dashes) bound to the
// key name: heartbeat.interval -> heartbeat-interval.
func FlagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

// Schema returns every key, in the order of the example file.
func Schema() []Key {
	out := make([]Key, len(schema))
	copy(out, schema)
	return out
}

// Lookup returns the key with the given dotted name (case-insensitive).
func Lookup(name string) (Key, bool) {
	i, ok := schemaIndex[strings.ToLower(name)]
	if !ok {
		return Key{}, false
	}
	return schema[i], true
}

var schemaIndex = func() map[string]int {
	m := make(map[string]int, len(schema))
	for i, k := range schema {
		m[k.Name] = i
	}
	return m
}()

// sections lists the first segments of key names in schema order, with a
// one-line description for the example file.
var sections = []struct{ name, help string }{
	{"peers", "Peers: workers, producers and clients connect here."},
	{"admin", "Admin protocol: consoles and `drover status` connect here."},
	{"events", "Event stream: every state change is published here."},
	{"metrics", "Prometheus metrics and health checks over HTTP."},
	{"security", "CURVE keys and client authorisation (docs/PROTOCOL.md section 15)."},
	{"ssh", "The console served over SSH by drover serve --ssh."},
	{"heartbeat", "Liveness of peers."},
	{"broker", "Job broker."},
	{"ledger", "Work-key ledger (deduplication)."},
	{"backoff", "Per-host back-off after throttling (HTTP 429/503)."},
	{"store", "Embedded store: queued and done records survive restarts."},
	{"results", "Finished jobs' results, kept by the coordinator and read with drover results."},
	{"notifier", "HTTP status reports of job results and errors."},
	{"crawl", "Defaults of the crawl worker."},
	{"console", "Terminal console."},
	{"log", "Logging (log/slog)."},
}

// Validation rules. Each returns the rule's wording and its check.
func durationIn(lo, hi time.Duration) (string, func(any) bool) {
	var text string
	switch {
	case hi == math.MaxInt64 && lo == 0:
		text = "a duration >= 0"
	case hi == math.MaxInt64:
		text = "a duration >= " + FormatDuration(lo)
	default:
		text = "a duration from " + FormatDuration(lo) + " to " + FormatDuration(hi)
	}
	return text, func(v any) bool { d := v.(time.Duration); return d >= lo && d <= hi }
}

func intIn(lo, hi int) (string, func(any) bool) {
	return fmt.Sprintf("an integer from %d to %d", lo, hi), func(v any) bool { n := v.(int); return n >= lo && n <= hi }
}

// fraction is the rule of a jitter: from 0 up to, not including, 1.
func fraction() (string, func(any) bool) {
	return "a number from 0 up to (not including) 1", func(v any) bool { f := v.(float64); return f >= 0 && f < 1 }
}

func sizeIn(lo, hi int64) (string, func(any) bool) {
	return "a size from " + FormatSize(lo) + " to " + FormatSize(hi), func(v any) bool { n := v.(int64); return n >= lo && n <= hi }
}

func nonEmpty() (string, func(any) bool) {
	return "a non-empty string", func(v any) bool { return strings.TrimSpace(v.(string)) != "" }
}

const forever = time.Duration(math.MaxInt64)

// key builds a schema entry; rule, when given, is one of the helpers above.
func key(name string, kind Kind, def any, help string, rule ...func() (string, func(any) bool)) Key {
	k := Key{Name: name, Kind: kind, Default: def, Help: help}
	if len(rule) > 0 {
		k.Rule, k.ok = rule[0]()
	}
	return k
}

// secret marks k as holding a secret (Key.Secret).
func secret(k Key) Key {
	k.Secret = true
	return k
}

func enum(name string, def string, choices []string, help string) Key {
	return Key{Name: name, Kind: KindEnum, Default: def, Help: help, Choices: choices,
		Rule: "one of " + strings.Join(choices, ", ")}
}

func dur(lo, hi time.Duration) func() (string, func(any) bool) {
	return func() (string, func(any) bool) { return durationIn(lo, hi) }
}

func ints(lo, hi int) func() (string, func(any) bool) {
	return func() (string, func(any) bool) { return intIn(lo, hi) }
}

// Sync policies of store.sync.
const (
	SyncAlways = "always" // every write is synced before it is acknowledged
	SyncBatch  = "batch"  // writes are synced together every store.sync_interval
	SyncNone   = "none"   // the operating system decides
)

// Console themes of console.theme.
var Themes = []string{"auto", "dark", "light", "high-contrast", "mono"}

// Log levels and formats.
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"text", "json"}
)

// schema is the table of every key. Keep it in example-file order.
var schema = []Key{
	key("peers.listen", KindEndpoint, "tcp://127.0.0.1:5570",
		"ZeroMQ endpoint workers, producers and clients connect to"),
	key("peers.gather", KindDuration, 100*time.Microsecond,
		"under load (messages less than twice this apart), how long the coordinator lets messages gather before it acts on them, so that one step handles several: fewer wake-ups for that much latency; 0 acts on each at once",
		dur(0, 10*time.Millisecond)),
	key("admin.listen", KindEndpoint, "tcp://127.0.0.1:5571",
		"ZeroMQ endpoint of the admin protocol (consoles, drover status)"),
	key("events.listen", KindEndpoint, "tcp://127.0.0.1:5572",
		"ZeroMQ endpoint publishing the event stream"),
	key("metrics.listen", KindHostPort, "127.0.0.1:9570",
		"HTTP address serving /metrics, /healthz and /readyz; empty disables"),
	secret(key("metrics.token", KindString, "",
		"bearer token /metrics requires (Authorization: Bearer TOKEN), or the path of a file holding it; empty requires none. /healthz and /readyz stay open")),

	secret(key("security.key", KindString, "",
		"this process's CURVE secret key: a key file written by drover keygen, or the 40 Z85 characters themselves. serve: the server's key, turning CURVE on for every listener; clients: their own key")),
	key("security.server_key", KindString, "",
		"clients: the server's CURVE public key, a .pub file or the 40 Z85 characters; empty connects without CURVE"),
	key("security.authorized_keys", KindString, "",
		"serve: the file of client keys admitted, one per line: ROLE Z85-PUBLIC-KEY [comment], roles worker, producer, operator, viewer; re-read on SIGHUP and when it changes"),
	key("security.insecure", KindBool, false,
		"serve and crawl: allow listening on a non-loopback address without a key (anyone who reaches the port can act as any peer)"),

	key("ssh.listen", KindHostPort, "",
		"serve: address serving the console over SSH, one console per session; a port alone (:2222) listens on loopback; empty disables"),
	key("ssh.authorized_keys", KindString, "",
		"serve: the SSH keys admitted to the console, one per line: ROLE followed by an OpenSSH public key line, roles operator (may act) and viewer (read-only); read at every login, and when it changes or on SIGHUP (ending the sessions of a removed key)"),
	key("ssh.host_key", KindString, "",
		"serve: the SSH server's private host key, generated (ed25519, mode 0600) when missing; empty: $XDG_STATE_HOME/drover/ssh_host_ed25519_key"),

	key("heartbeat.interval", KindDuration, time.Second,
		"time between heartbeats exchanged with every peer", dur(10*time.Millisecond, time.Hour)),
	key("heartbeat.liveness", KindInt, 3,
		"heartbeats a peer may miss before it is declared dead", ints(1, 100)),

	key("broker.max_request_failures", KindInt, 3,
		"internal failures and worker deaths charged to a job before it fails", ints(1, 1000)),
	key("broker.retry_start", KindDuration, time.Second,
		"delay before a job that failed (an internal outcome or a charged worker death) with budget left is queued again; doubles with each further failure of the job; 0 queues it at once", dur(0, forever)),
	key("broker.retry_cap", KindDuration, 5*time.Minute,
		"longest delay before a retry", dur(time.Millisecond, forever)),
	key("broker.retry_jitter", KindFloat, 0.2,
		"random fraction added to or taken from each retry delay (0: none)", fraction),
	key("broker.unroutable_timeout", KindDuration, time.Duration(0),
		"how long a job no live worker can take waits before it fails; 0 waits forever", dur(0, forever)),
	key("broker.reclaim_timeout", KindDuration, time.Duration(0),
		"after a restart from the store, how long a job that was running waits for its worker to reconnect and reclaim it before it is requeued uncharged; 0 means heartbeat interval x liveness x 2", dur(0, forever)),
	key("broker.holdback_start", KindDuration, 5*time.Second,
		"a worker id that dies holding jobs before reporting any result twice in a row gets no job for this long; each further such death doubles it", dur(time.Millisecond, forever)),
	key("broker.holdback_cap", KindDuration, 5*time.Minute,
		"longest hold of a worker id that keeps dying before its first result", dur(time.Millisecond, forever)),

	key("ledger.request_ttl", KindDuration, 5*time.Minute,
		"lease of a requested key; when it ends the key passes to the next waiter even if its owner lives",
		dur(time.Second, forever)),
	key("ledger.done_ttl", KindDuration, time.Duration(0),
		"how long a done key refuses new requests (its recrawl interval); 0 keeps it done forever", dur(0, forever)),
	key("ledger.failed_ttl", KindDuration, 24*time.Hour,
		"how long a failed job is kept, shown and requeueable, before it is forgotten; 0 keeps it forever",
		dur(0, forever)),
	key("ledger.huge_pages", KindBool, true,
		"the big tables outside the Go heap (the ledger's and the job broker's) ask the OS for transparent huge pages (madvise): fewer TLB misses and page faults per key; false asks for small pages, for a host where THP defragmentation stalls page faults"),

	key("backoff.start", KindDuration, time.Minute,
		"first per-host back-off after a throttled answer without Retry-After", dur(time.Millisecond, forever)),
	key("backoff.cap", KindDuration, 24*time.Hour,
		"longest per-host back-off, Retry-After included", dur(time.Millisecond, forever)),
	key("backoff.jitter", KindFloat, 0.2,
		"random fraction added to or taken from each back-off (0: none)", fraction),
	key("backoff.forgive", KindDuration, 10*time.Minute,
		"quiet time after which a host's next back-off starts again from backoff.start", dur(0, forever)),

	key("store.path", KindString, "",
		"directory of drover serve's embedded store; empty: $XDG_STATE_HOME/drover/store (~/.local/state/drover/store); memory: keep everything in RAM, lost on restart"),
	secret(key("store.url", KindString, "",
		"a Redis Cluster (or Valkey) several coordinators share instead of the embedded store: redis://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...] (rediss:// for TLS); the other nodes are discovered. --store redis://... sets it too")),
	enum("store.sync", SyncBatch, []string{SyncAlways, SyncBatch, SyncNone},
		"when writes reach the disk: always (each write), batch (every store.sync_interval), none (the OS decides)"),
	key("store.sync_interval", KindDuration, 10*time.Millisecond,
		"interval between syncs of the batch policy", dur(0, 10*time.Second)),
	key("store.done_cache", KindInt, 1_000_000,
		"done and failed keys serve keeps in memory; older ones are evicted once on disk and looked up in the store when asked for; 0 keeps every one in memory",
		ints(0, 1<<30)),
	key("store.resident_jobs", KindInt, 1_000_000,
		"queued jobs serve keeps in memory; the others stay only in the store and are paged in, oldest first, before the ones in memory run out; 0 keeps every one in memory",
		ints(0, 1<<30)),
	key("store.redis.wait_replicas", KindInt, 0,
		"with a Redis Cluster store: replicas of a shard that must hold a batch of transitions (WAIT) before it is answered, so a failover loses no accepted key; a shard with fewer replicas in sync refuses until one is back; 0 replicates asynchronously (a failover may lose what the replica lagged)",
		ints(0, 100)),
	key("store.redis.wait_timeout", KindDuration, 500*time.Millisecond,
		"with store.redis.wait_replicas: how long a batch waits for the replicas before the shard counts as refusing", dur(time.Millisecond, 4*time.Second)),

	key("results.max_age", KindDuration, time.Duration(0),
		"results that finished longer ago are deleted; 0 keeps them whatever their age", dur(0, forever)),
	key("results.max_bytes", KindSize, int64(1<<30),
		"the oldest results are deleted while the results kept take more (in memory, with --store memory: at most 256MiB); 0: no limit",
		func() (string, func(any) bool) { return sizeIn(0, 1<<50) }),
	key("results.dir", KindString, "",
		"directory drover serve also writes the results to, as JSON lines in rotating files results-NNNNNNNN.jsonl; empty: none"),
	key("results.file_bytes", KindSize, int64(64<<20),
		"size at which a results file is closed and the next one begun", func() (string, func(any) bool) { return sizeIn(1<<10, 1<<40) }),

	key("notifier.url", KindURL, "",
		"URL job results and errors are POSTed to as JSON, each with an Idempotency-Key header (ORIGIN-SEQ) to deduplicate by; empty disables"),
	key("notifier.retries", KindInt, 4,
		"POST attempts per report, the first included, with a doubling delay between them", ints(1, 20)),
	key("notifier.retry_delay", KindDuration, time.Second,
		"delay before the second attempt; it doubles after each one", dur(time.Millisecond, time.Hour)),
	key("notifier.timeout", KindDuration, 10*time.Second,
		"timeout of one POST", dur(time.Millisecond, 10*time.Minute)),
	key("notifier.queue", KindInt, 1000,
		"reports waiting in memory to be sent; when the queue is full, new reports spill to a file beside the store (to memory with --store memory) and are sent in order once it drains: none is dropped", ints(1, 1000000)),

	key("crawl.user_agent", KindString, "drover/1.0",
		"User-Agent header of the crawl worker", nonEmpty),
	key("crawl.per_host", KindInt, 2,
		"concurrent fetches from one host: on the coordinator (serve, crawl, drover) the fleet's limit, 0 for none; on a worker, when set, a local cap that can only lower the fleet's", ints(0, 1000)),
	key("crawl.timeout", KindDuration, 30*time.Second,
		"limit on one fetch, body included", dur(time.Millisecond, time.Hour)),
	key("crawl.connect_timeout", KindDuration, 10*time.Second,
		"limit on connecting to a host (TCP and TLS)", dur(time.Millisecond, time.Hour)),
	key("crawl.max_body", KindSize, int64(10<<20),
		"largest response body read; the rest is discarded", func() (string, func(any) bool) { return sizeIn(1<<10, 1<<40) }),
	key("crawl.min_delay", KindDuration, time.Second,
		"least time between two fetches from one host: on the coordinator the fleet's, raised by a robots.txt Crawl-delay; by default not applied to loopback and private-address hosts, when set applied to all; on a worker, when set, a local cap that can only lower the fleet's rate", dur(0, time.Hour)),
	key("crawl.allow_private", KindBool, false,
		"let a crawl from a public seed follow links to loopback, private, link-local (cloud metadata), unique-local and CGNAT addresses, which it refuses otherwise; a seed on such an address may always reach them"),

	enum("console.theme", "auto", Themes,
		"colour theme; auto picks dark or light from the terminal's background"),
	key("console.palette", KindStringMap, map[string]string{},
		"colours overriding the theme's, role: colour (#rgb, #rrggbb or an ANSI number 0-255)"),
	key("console.refresh", KindDuration, 100*time.Millisecond,
		"time between two refreshes of the console", dur(10*time.Millisecond, time.Minute)),
	key("console.read_only", KindBool, false,
		"refuse every operator action (evict, drain, requeue, pause)"),

	enum("log.level", "info", LogLevels, "least severe level logged"),
	enum("log.format", "text", LogFormats, "log line format"),
	key("log.file", KindString, "",
		"file the log is appended to; empty logs to standard error"),
}
