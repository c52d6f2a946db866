package config

import (
	"reflect"
	"testing"
	"time"
)

// goType is the Go type each kind has in Config.
var goType = map[Kind]reflect.Type{
	KindString:    reflect.TypeOf(""),
	KindEnum:      reflect.TypeOf(""),
	KindBool:      reflect.TypeOf(false),
	KindInt:       reflect.TypeOf(0),
	KindFloat:     reflect.TypeOf(0.0),
	KindDuration:  reflect.TypeOf(time.Duration(0)),
	KindSize:      reflect.TypeOf(int64(0)),
	KindEndpoint:  reflect.TypeOf(""),
	KindHostPort:  reflect.TypeOf(""),
	KindURL:       reflect.TypeOf(""),
	KindStringMap: reflect.TypeOf(map[string]string{}),
}

func TestDefaultsAreValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
}

func TestDefaultValues(t *testing.T) {
	c := Default()
	tests := []struct {
		key  string
		want any
	}{
		{"peers.listen", "tcp://127.0.0.1:5570"},
		{"peers.gather", 100 * time.Microsecond},
		{"admin.listen", "tcp://127.0.0.1:5571"},
		{"events.listen", "tcp://127.0.0.1:5572"},
		{"metrics.listen", "127.0.0.1:9570"},
		{"heartbeat.interval", time.Second},
		{"heartbeat.liveness", 3},
		{"broker.max_request_failures", 3},
		{"ledger.request_ttl", 5 * time.Minute},
		{"backoff.start", time.Minute},
		{"backoff.jitter", 0.2},
		{"store.sync", "batch"},
		{"store.sync_interval", 10 * time.Millisecond},
		{"notifier.retries", 4},
		{"crawl.per_host", 2},
		{"crawl.max_body", int64(10 << 20)},
		{"console.theme", "auto"},
		{"console.refresh", 100 * time.Millisecond},
		{"console.palette", map[string]string{}},
		{"log.format", "text"},
	}
	for _, tt := range tests {
		got, err := c.Get(tt.key)
		if err != nil {
			t.Errorf("Get(%s): %v", tt.key, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("default %s = %#v, want %#v", tt.key, got, tt.want)
		}
	}
	if c.Heartbeat.Interval != time.Second || c.Store.Sync != SyncBatch {
		t.Errorf("typed fields not filled: %+v %+v", c.Heartbeat, c.Store)
	}
}

func TestDefaultDoesNotShareMaps(t *testing.T) {
	a, b := Default(), Default()
	a.Console.Palette["accent"] = "#fff"
	if len(b.Console.Palette) != 0 {
		t.Fatal("two Defaults share the palette map")
	}
	if m := Schema()[0]; m.Name != "peers.listen" {
		t.Fatalf("schema order changed: first key %s", m.Name)
	}
	k, _ := Lookup("console.palette")
	if len(k.Default.(map[string]string)) != 0 {
		t.Fatal("changing a Config changed the schema's default")
	}
}

func TestGetUnknownKey(t *testing.T) {
	if _, err := Default().Get("heartbeat.nope"); err == nil {
		t.Fatal("Get of an unknown key succeeded")
	}
	if _, err := Default().Get("heartbeat.interval.x"); err == nil {
		t.Fatal("Get below a leaf succeeded")
	}
}
