package conformance

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/net/wire"
)

// The events socket's messages (docs/PROTOCOL.md §14): two frames, the
// topic and the event as JSON. events.json holds valid ones, with the
// event they carry, and malformed ones, with the code wire.DecodeEvent
// refuses them with (400; 413 for a body over 16 MiB). Nobody answers an
// event: the code is what a subscriber's decoder reports.

type eventVector struct {
	name   string
	frames [][]byte
	code   wire.Code // 0: valid
}

func eventVectors(t *testing.T) []eventVector {
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	enc := func(ev admin.Event) [][]byte {
		f, err := wire.EncodeEvent(ev)
		if err != nil {
			t.Fatalf("event %s: %v", ev.Kind, err)
		}
		return f
	}
	raw := func(topic string, body string) [][]byte { return [][]byte{[]byte(topic), []byte(body)} }
	long := strings.Repeat("x", wire.MaxTopic-2) // "a." + long: 64 bytes
	const bad = wire.CodeMalformed
	return []eventVector{
		{"job-done", enc(admin.Event{Seq: 7, At: at, Kind: admin.EventJobDone, JobID: 17, Key: "76239173fe048a87a5b78ba95468602b",
			URL: "https://example.com/", Worker: "w1", Cursor: 3, Output: "ok"}), 0},
		{"host-backoff", enc(admin.Event{Seq: 8, At: at, Kind: admin.EventHostBackoff, Detail: "example.com until 2026-12-01T12:01:00Z"}), 0},
		{"topic-64-bytes-unknown-kind", raw("a."+long, `{"seq":9,"at":"2026-12-01T12:00:00Z","kind":"a.`+long+`"}`), 0},
		{"topic-empty", raw("", `{"seq":1,"at":"2026-12-01T12:00:00Z","kind":""}`), bad},
		{"topic-65-bytes", raw("a."+long+"x", `{"seq":1,"at":"2026-12-01T12:00:00Z","kind":"a.`+long+`x"}`), bad},
		{"topic-upper-case", raw("Job.done", `{"seq":1,"at":"2026-12-01T12:00:00Z","kind":"Job.done"}`), bad},
		{"topic-space", raw("job done", `{"seq":1,"at":"2026-12-01T12:00:00Z","kind":"job done"}`), bad},
		{"kind-differs-from-topic", raw("job.done", `{"seq":1,"at":"2026-12-01T12:00:00Z","kind":"job.failed"}`), bad},
		{"body-not-json", raw("job.done", `job 17 done`), bad},
		{"body-invalid-utf8", raw("job.done", "{\"seq\":1,\"kind\":\"job.done\",\"detail\":\"\xff\"}"), bad},
		{"one-frame", [][]byte{[]byte("job.done")}, bad},
		{"three-frames", [][]byte{[]byte("job.done"), []byte(`{"seq":1,"kind":"job.done"}`), {}}, bad},
	}
}

type eventJSON struct {
	Name   string   `json:"name"`
	Frames []string `json:"frames"`
	Event  any      `json:"event,omitempty"`
	Code   int      `json:"code,omitempty"`
}

// TestEvents: events.json is what wire.DecodeEvent makes of each vector:
// the event a valid one carries, the code of a malformed one.
func TestEvents(t *testing.T) {
	var out []eventJSON
	valid := 0
	for _, v := range eventVectors(t) {
		ev, err := wire.DecodeEvent(v.frames)
		ej := eventJSON{Name: v.name, Frames: hexFrames(v.frames)}
		var we *wire.Error
		switch {
		case v.code == 0 && err != nil:
			t.Fatalf("%s: %v, want a valid event", v.name, err)
		case v.code == 0:
			var body any
			if err := json.Unmarshal(v.frames[1], &body); err != nil {
				t.Fatal(err)
			}
			if string(ev.Kind) != string(v.frames[0]) {
				t.Fatalf("%s: kind %q, topic %q", v.name, ev.Kind, v.frames[0])
			}
			ej.Event = body
			valid++
		case !errors.As(err, &we):
			t.Fatalf("%s: decoded without error (%+v), want code %d", v.name, ev, v.code)
		case we.Code != v.code:
			t.Fatalf("%s: code %d (%s), want %d", v.name, we.Code, we.Msg, v.code)
		default:
			ej.Code = int(v.code)
		}
		out = append(out, ej)
	}
	if valid == 0 || valid == len(out) {
		t.Fatalf("%d valid event vectors of %d: want both kinds", valid, len(out))
	}
	kitFile(t, "events.json", map[string]any{"max_topic": wire.MaxTopic, "vectors": out})
}

// TestStoredEvents: each stored event vector decodes through
// wire.DecodeEvent to its event, or is refused with its code.
func TestStoredEvents(t *testing.T) {
	var kit struct {
		MaxTopic int `json:"max_topic"`
		Vectors  []struct {
			Name   string   `json:"name"`
			Frames []string `json:"frames"`
			Event  any      `json:"event"`
			Code   int      `json:"code"`
		} `json:"vectors"`
	}
	readKit(t, "events.json", &kit)
	if kit.MaxTopic != wire.MaxTopic {
		t.Errorf("events.json max_topic %d, want %d", kit.MaxTopic, wire.MaxTopic)
	}
	if len(kit.Vectors) == 0 {
		t.Fatal("events.json has no vectors")
	}
	for _, v := range kit.Vectors {
		ev, err := wire.DecodeEvent(unhex(t, v.Name, v.Frames))
		var we *wire.Error
		switch {
		case v.Code == 0 && err != nil:
			t.Errorf("%s: the Go codec refuses the stored event: %v", v.Name, err)
		case v.Code == 0:
			if got, want := asJSON(t, ev), v.Event; !jsonEqual(got, want) {
				t.Errorf("%s: decodes to %v, the file says %v", v.Name, got, want)
			}
		case !errors.As(err, &we):
			t.Errorf("%s: the Go codec accepts the stored event (err %v), the file says code %d", v.Name, err, v.Code)
		case int(we.Code) != v.Code:
			t.Errorf("%s: code %d (%s), the file says %d", v.Name, we.Code, we.Msg, v.Code)
		}
	}
}

// jsonEqual compares two generic JSON values (numbers as json.Number).
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
