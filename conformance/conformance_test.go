package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the kit's JSON files from the Go codec")

// kitFile compares the checked-in file with want (rewriting it under
// -update): the kit must always be what drover's codec says.
func kitFile(t *testing.T, name string, want any) {
	t.Helper()
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run go test ./conformance -update to write the kit)", err)
	}
	if !bytes.Equal(got, b) {
		t.Errorf("%s differs from what the Go codec produces; if the change is intended, run go test ./conformance -update\n%s",
			name, cmp.Diff(string(b), string(got)))
	}
}

func hexFrames(frames [][]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = hex.EncodeToString(f)
	}
	return out
}

type frameVector struct {
	Name    string         `json:"name"`
	Command string         `json:"command"`
	Req     uint64         `json:"req"`
	Frames  []string       `json:"frames"`
	Fields  map[string]any `json:"fields"`
}

// TestFrames: every valid vector decodes to its message and encodes back
// to the same frames; frames.json is what the codec makes of them.
func TestFrames(t *testing.T) {
	var out []frameVector
	seen := map[wire.Command]bool{}
	for _, v := range frameVectors() {
		frames, err := wire.Encode(v.m)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		m, err := wire.Decode(frames)
		if err != nil {
			t.Fatalf("%s: decode: %v", v.name, err)
		}
		again, err := wire.Encode(m)
		if err != nil || !reflect.DeepEqual(hexFrames(again), hexFrames(frames)) {
			t.Errorf("%s: does not survive decode and encode: %v", v.name, err)
		}
		seen[v.m.Command()] = true
		out = append(out, frameVector{Name: v.name, Command: v.m.Command().String(), Req: v.m.RequestID(),
			Frames: hexFrames(frames), Fields: normalJSON(t, meaning(m))})
	}
	for c := wire.Command(1); c.Valid(); c++ {
		if !seen[c] {
			t.Errorf("no frame vector for %s", c)
		}
	}
	kitFile(t, "frames.json", map[string]any{"protocol": wire.Protocol, "vectors": out})
}

// normalJSON passes v through JSON, so that numbers compare as the file
// holds them.
func normalJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type errorJSON struct {
	Name   string   `json:"name"`
	Frames []string `json:"frames"`
	Fill   *fill    `json:"fill,omitempty"`
	Code   int      `json:"code"`
	Req    uint64   `json:"req"`
}

// TestErrors: every error vector is refused by the codec with its code
// (and the request id when frame 2 was readable).
func TestErrors(t *testing.T) {
	var out []errorJSON
	names := map[string]bool{}
	for _, v := range errorVectors() {
		if names[v.name] {
			t.Fatalf("two error vectors named %s", v.name)
		}
		names[v.name] = true
		_, err := wire.Decode(v.message())
		var we *wire.Error
		if !errors.As(err, &we) {
			t.Errorf("%s: decoded without error, want code %d", v.name, v.code)
			continue
		}
		if we.Code != v.code {
			t.Errorf("%s: code %d (%s), want %d", v.name, we.Code, we.Msg, v.code)
		}
		var req uint64
		if len(v.frames) >= 3 && len(v.frames[2]) == 8 {
			req = binary.BigEndian.Uint64(v.frames[2])
		}
		out = append(out, errorJSON{Name: v.name, Frames: hexFrames(v.frames), Fill: fills[v.name], Code: int(v.code), Req: req})
	}
	kitFile(t, "errors.json", map[string]any{"vectors": out})
}

type urlJSON struct {
	Input       string `json:"input"`
	Normalized  string `json:"normalized,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// TestURLs: the URL vectors are what the coordinator makes of each input:
// its normal form and fingerprint, or the refusal's reason token.
func TestURLs(t *testing.T) {
	var out []urlJSON
	for _, in := range urlInputs {
		k, err := id.NewKey("news", "html", in)
		if err != nil {
			var ue *id.URLError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: %v, want a *id.URLError", in, err)
			}
			out = append(out, urlJSON{Input: in, Reason: string(coord.ReasonBadKey)})
			continue
		}
		fp := k.Fingerprint()
		out = append(out, urlJSON{Input: in, Normalized: k.URL, Fingerprint: hex.EncodeToString(fp[:])})
	}
	kitFile(t, "url.json", map[string]any{"crawler": "news", "processor": "html", "vectors": out})
}

type adminJSON struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
	Body   any    `json:"body"`
}

// TestAdmin: admin.json holds a body of every admin type, and schema/ the
// JSON Schema of each type, generated from the Go types; every sample
// round-trips through its Go type.
func TestAdmin(t *testing.T) {
	var out []adminJSON
	for _, s := range adminSamples() {
		b, err := json.Marshal(s.body)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(s.body))
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.body, back.Elem().Interface()); diff != "" {
			t.Errorf("%s does not round-trip:\n%s", s.name, diff)
		}
		var body any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, adminJSON{Name: s.name, Schema: s.schema, Body: body})
	}
	kitFile(t, "admin.json", map[string]any{"vectors": out})
	for _, typ := range adminTypes {
		kitFile(t, filepath.Join("schema", typ.Name()+".json"), schemaOf(typ))
	}
}

var adminTypes = []reflect.Type{
	reflect.TypeOf(admin.Query{}), reflect.TypeOf(admin.Page{}), reflect.TypeOf(admin.Totals{}),
	reflect.TypeOf(admin.Action{}), reflect.TypeOf(admin.ActionResult{}), reflect.TypeOf(admin.WorkerRow{}),
	reflect.TypeOf(admin.JobRow{}), reflect.TypeOf(admin.Attempt{}), reflect.TypeOf(admin.WaiterRow{}),
	reflect.TypeOf(admin.HostRow{}), reflect.TypeOf(admin.Event{}), reflect.TypeOf(admin.Result{}),
	reflect.TypeOf(admin.Crawl{}), reflect.TypeOf(admin.Listeners{}), reflect.TypeOf(admin.Cluster{}),
	reflect.TypeOf(admin.ClusterCoordinator{}),
}

// enums are the members whose values are a closed list.
var enums = map[string][]string{
	"Query.view":  {"workers", "jobs", "waiters", "retries", "events", "results", "crawls"},
	"Action.kind": actionKinds(),
	"JobRow.wait": waits(),
}

func waits() []string {
	var out []string
	for _, w := range admin.Waits() {
		out = append(out, string(w))
	}
	return out
}

func actionKinds() []string {
	var out []string
	for _, k := range admin.ActionKinds() {
		out = append(out, string(k))
	}
	return out
}

// required are the members a body must have.
var required = map[string][]string{"Query": {"view"}, "Action": {"kind"}}

func schemaOf(t reflect.Type) map[string]any {
	props := map[string]any{}
	var order []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := schemaType(f.Type)
		if e, ok := enums[t.Name()+"."+name]; ok {
			p["enum"] = e
		}
		props[name] = p
		order = append(order, name)
	}
	sort.Strings(order)
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  t.Name() + ".json",
		"title":                "admin." + t.Name() + " (docs/PROTOCOL.md §13)",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": true,
	}
	if r, ok := required[t.Name()]; ok {
		s["required"] = r
	}
	return s
}

var timeType = reflect.TypeOf(time.Time{})

func schemaType(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaType(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaType(t.Elem())}
	case reflect.Struct:
		return map[string]any{"$ref": t.Name() + ".json"}
	}
	panic("conformance: no schema for " + t.String())
}
