package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Config is the effective configuration. Every field is one schema key;
// the yaml tags spell the key's dotted name segment by segment.
type Config struct {
	Peers     Peers     `yaml:"peers"`
	Admin     Listener  `yaml:"admin"`
	Events    Listener  `yaml:"events"`
	Metrics   Metrics   `yaml:"metrics"`
	Security  Security  `yaml:"security"`
	SSH       SSH       `yaml:"ssh"`
	Heartbeat Heartbeat `yaml:"heartbeat"`
	Broker    Broker    `yaml:"broker"`
	Ledger    Ledger    `yaml:"ledger"`
	Backoff   Backoff   `yaml:"backoff"`
	Store     Store     `yaml:"store"`
	Results   Results   `yaml:"results"`
	Notifier  Notifier  `yaml:"notifier"`
	Crawl     Crawl     `yaml:"crawl"`
	Console   Console   `yaml:"console"`
	Log       Log       `yaml:"log"`

	// Crawls are the file's crawls section, by name: crawls the
	// coordinator defines at start-up. Not a schema key: no flag or
	// environment variable sets it.
	Crawls map[string]CrawlDef `yaml:"-"`
	// CrawlHosts are the file's crawl.hosts list: politeness rules per
	// host pattern, held by the coordinator. Not a schema key either.
	CrawlHosts []HostRule `yaml:"-"`

	// File is the config file that was read, or empty when none was.
	File string `yaml:"-"`
	// Sources says where each key's value came from, by key name; a key
	// missing from it has its default. Load fills it.
	Sources map[string]Source `yaml:"-"`
}

// Listener is a listen address: a ZeroMQ endpoint for peers, admin and
// events, HOST:PORT for metrics (empty disables the metrics server).
type Listener struct {
	Listen string `yaml:"listen"`
}

// Peers is the peers endpoint and how the coordinator reads it.
type Peers struct {
	Listen string `yaml:"listen"`
	// Gather: under load, how long messages gather before the coordinator
	// acts on them (server.Options.Gather).
	Gather time.Duration `yaml:"gather"`
}

// Metrics is the metrics listener.
type Metrics struct {
	Listen string `yaml:"listen"` // HOST:PORT; empty disables
	Token  string `yaml:"token"`  // bearer token for /metrics, or a file holding it; empty: none
}

// Security holds the CURVE keys (docs/PROTOCOL.md §15).
type Security struct {
	Key            string `yaml:"key"`             // own secret key: a file or Z85
	ServerKey      string `yaml:"server_key"`      // clients: the server's public key, a file or Z85
	AuthorizedKeys string `yaml:"authorized_keys"` // serve: the admitted client keys
	Insecure       bool   `yaml:"insecure"`        // serve: allow non-loopback binds without a key
}

// SSH configures the console served over SSH (drover serve --ssh).
type SSH struct {
	Listen         string `yaml:"listen"`          // HOST:PORT (a port alone: loopback); empty disables
	AuthorizedKeys string `yaml:"authorized_keys"` // ROLE OPENSSH-PUBLIC-KEY [comment] per line
	HostKey        string `yaml:"host_key"`        // private host key file, generated when missing
}

// Heartbeat configures peer liveness.
type Heartbeat struct {
	Interval time.Duration `yaml:"interval"`
	Liveness int           `yaml:"liveness"`
}

// Broker configures the job broker.
type Broker struct {
	MaxRequestFailures int           `yaml:"max_request_failures"`
	RetryStart         time.Duration `yaml:"retry_start"` // 0: retries are queued at once
	RetryCap           time.Duration `yaml:"retry_cap"`
	RetryJitter        float64       `yaml:"retry_jitter"`       // 0: none
	UnroutableTimeout  time.Duration `yaml:"unroutable_timeout"` // 0: wait forever
	ReclaimTimeout     time.Duration `yaml:"reclaim_timeout"`    // 0: heartbeat x liveness x 2
	HoldbackStart      time.Duration `yaml:"holdback_start"`
	HoldbackCap        time.Duration `yaml:"holdback_cap"`
}

// Ledger configures the work-key ledger.
type Ledger struct {
	RequestTTL time.Duration `yaml:"request_ttl"`
	DoneTTL    time.Duration `yaml:"done_ttl"`   // 0: done forever
	FailedTTL  time.Duration `yaml:"failed_ttl"` // 0: kept forever
	HugePages  bool          `yaml:"huge_pages"` // the ledger's and the broker's tables ask for transparent huge pages
}

// Backoff configures per-host back-off after throttling.
type Backoff struct {
	Start   time.Duration `yaml:"start"`
	Cap     time.Duration `yaml:"cap"`
	Jitter  float64       `yaml:"jitter"`
	Forgive time.Duration `yaml:"forgive"`
}

// Store configures the embedded store.
type Store struct {
	Path         string        `yaml:"path"` // empty: in memory
	URL          string        `yaml:"url"`  // a Redis Cluster instead of the embedded store
	Sync         string        `yaml:"sync"` // SyncAlways, SyncBatch or SyncNone
	SyncInterval time.Duration `yaml:"sync_interval"`
	DoneCache    int           `yaml:"done_cache"`    // done keys kept in memory; 0: all
	ResidentJobs int           `yaml:"resident_jobs"` // queued jobs kept in memory; 0: all
	Redis        StoreRedis    `yaml:"redis"`
}

// StoreRedis configures a store on Redis Cluster.
type StoreRedis struct {
	WaitReplicas int           `yaml:"wait_replicas"` // replicas a transition waits for; 0: none
	WaitTimeout  time.Duration `yaml:"wait_timeout"`  // how long it waits for them
}

// Results configures the results kept by the coordinator.
type Results struct {
	MaxAge    time.Duration `yaml:"max_age"`    // 0: no age limit
	MaxBytes  int64         `yaml:"max_bytes"`  // 0: no size limit
	Dir       string        `yaml:"dir"`        // empty: no result files
	FileBytes int64         `yaml:"file_bytes"` // rotation size of the files
}

// Notifier configures HTTP status reports.
type Notifier struct {
	URL        string        `yaml:"url"` // empty: disabled
	Retries    int           `yaml:"retries"`
	RetryDelay time.Duration `yaml:"retry_delay"`
	Timeout    time.Duration `yaml:"timeout"`
	Queue      int           `yaml:"queue"`
}

// Crawl holds the crawl worker's defaults.
type Crawl struct {
	UserAgent      string        `yaml:"user_agent"`
	PerHost        int           `yaml:"per_host"`
	Timeout        time.Duration `yaml:"timeout"`
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	MaxBody        int64         `yaml:"max_body"` // bytes
	MinDelay       time.Duration `yaml:"min_delay"`
	AllowPrivate   bool          `yaml:"allow_private"`
}

// Console configures the terminal console.
type Console struct {
	Theme    string            `yaml:"theme"`   // one of Themes
	Palette  map[string]string `yaml:"palette"` // role -> colour
	Refresh  time.Duration     `yaml:"refresh"`
	ReadOnly bool              `yaml:"read_only"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // one of LogLevels
	Format string `yaml:"format"` // one of LogFormats
	File   string `yaml:"file"`   // empty: standard error
}

// Default returns the configuration with every key at its default.
func Default() *Config {
	c := &Config{}
	for _, k := range schema {
		if err := c.set(k.Name, cloneValue(k.Default)); err != nil {
			// The schema and the struct are checked against each other by
			// the package's tests; reaching this is a programming error.
			panic(err)
		}
	}
	return c
}

// Get returns the value of the key with the given dotted name, typed as
// its Kind says.
func (c *Config) Get(name string) (any, error) {
	f, err := c.field(name)
	if err != nil {
		return nil, err
	}
	return cloneValue(f.Interface()), nil
}

// Source returns where the key's value came from.
func (c *Config) Source(name string) Source {
	if s, ok := c.Sources[name]; ok {
		return s
	}
	return Source{Kind: FromDefault}
}

func (c *Config) set(name string, v any) error {
	f, err := c.field(name)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(v)
	if !rv.Type().AssignableTo(f.Type()) {
		return fmt.Errorf("config: key %s holds %s, got a %T", name, f.Type(), v)
	}
	f.Set(rv)
	return nil
}

// field finds the struct field of a dotted key name through yaml tags.
func (c *Config) field(name string) (reflect.Value, error) {
	v := reflect.ValueOf(c).Elem()
	for _, seg := range strings.Split(name, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("config: no key %q: %s is not a section", name, seg)
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == seg {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, fmt.Errorf("config: no key %q: no field for %q", name, seg)
		}
	}
	return v, nil
}

// cloneValue copies maps so a Config never shares one with the schema or
// another Config.
func cloneValue(v any) any {
	if m, ok := v.(map[string]string); ok {
		out := make(map[string]string, len(m))
		for k, s := range m {
			out[k] = s
		}
		return out
	}
	return v
}
