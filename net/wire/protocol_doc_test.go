package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drover/coord/id"

	"github.com/google/go-cmp/cmp"
)

// docs/PROTOCOL.md is tested: its hexdumps must be what Encode produces,
// and its Python reference codec must interoperate with this package in
// both directions.

const protocolDoc = "../../docs/PROTOCOL.md"

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatalf("read %s: %v", protocolDoc, err)
	}
	return string(b)
}

// fenced returns the body of the fenced block that starts right after
// marker (a line of the document), or whose first line is marker.
func fencedBlocks(doc, fence string) []string {
	var out []string
	for rest := doc; ; {
		i := strings.Index(rest, "\n```"+fence+"\n")
		if i < 0 {
			return out
		}
		rest = rest[i+len("\n```"+fence+"\n"):]
		j := strings.Index(rest, "\n```\n")
		if j < 0 {
			return out
		}
		out = append(out, rest[:j+1])
		rest = rest[j:]
	}
}

func TestProtocolDocHexdumps(t *testing.T) {
	doc := readDoc(t)
	var dumps []string
	for _, part := range strings.Split(doc, "<!-- hexdump -->")[1:] {
		blocks := fencedBlocks("\n"+strings.TrimLeft(part, "\n"), "text")
		if len(blocks) == 0 {
			t.Fatal("a hexdump marker without a text block after it")
		}
		dumps = append(dumps, blocks[0])
	}
	examples := docExamples()
	if len(dumps) != len(examples) {
		t.Fatalf("%d hexdumps in the document, %d examples here", len(dumps), len(examples))
	}
	for i, m := range examples {
		if want := hexdump(mustEncode(t, m)); dumps[i] != want {
			t.Errorf("hexdump %d (%s) in the document is wrong; it should be:\n%s", i, m.Command(), want)
		}
	}
	fpHex := id.Key{Crawler: "news", Processor: "html", URL: "https://example.com/"}.Fingerprint().String()
	if !strings.Contains(doc, "`"+fpHex+"`") {
		t.Errorf("the document does not quote the example's fingerprint %s", fpHex)
	}
}

func pythonBlock(t *testing.T, doc, firstLine string) string {
	t.Helper()
	for _, b := range fencedBlocks(doc, "python") {
		if strings.HasPrefix(b, firstLine) {
			return b
		}
	}
	t.Fatalf("no python block starting with %q", firstLine)
	return ""
}

const pyHarness = `
import sys, json, drv2
def plain(x):
    if isinstance(x, (bytes, bytearray)): return x.hex()
    if isinstance(x, (list, tuple)): return [plain(v) for v in x]
    if isinstance(x, dict): return {k: plain(v) for k, v in x.items()}
    return x
enc = {
    "hello": drv2.hello(1, drv2.WORKER, "w1", "box", 4, 1000, [("lang", "en")], [(41, 1), (42, 3)]),
    "console": drv2.hello(2, drv2.CONSOLE, "ops", read_only=True),
    "heartbeat": drv2.heartbeat(),
    "disconnect": drv2.disconnect(200, "bye"),
    "request": drv2.request(5, [("news", "html", "https://a.example/"), ("", "", "https://\u00fc.example/\u00fc")]),
    "queue": drv2.queue(6, [("news", "html", "https://a.example/")]),
    "done": drv2.done(7, [(("news", "html", "https://a.example/"), drv2.DONE_FAILED)]),
    "submit": drv2.submit(42, [("news", "html", "https://example.com/", [("lang", "en")], b'{"depth":1}'),
                               ("c", "p", "https://b/", [], b"")]),
    "result": drv2.result(9, [(101, 2, drv2.R_OK, 0, "", b"out", [("news", "html", "https://example.com/b", [], b"")]),
                              (102, 1, drv2.R_THROTTLED, 30000, "HTTP 429", b"", [])]),
    "progress": drv2.progress(101, 2, "half"),
}
received = json.load(sys.stdin)
dec = {}
for name, frames in received.items():
    cmd, req, fields = drv2.decode([bytes.fromhex(f) for f in frames])
    dec[name] = {"command": cmd, "req": req, "fields": plain(fields)}
try:
    drv2.decode([b"DRV2", b"JOB", bytes(8), bytes.fromhex("00000001")])
    dec["truncated"] = "accepted"
except drv2.Malformed:
    dec["truncated"] = "refused"
dec["fingerprint"] = fingerprint("news", "html", "https://example.com/").hex()
json.dump({"encoded": {k: [f.hex() for f in v] for k, v in enc.items()}, "decoded": dec}, sys.stdout)
`

func TestProtocolDocPythonCodec(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	doc := readDoc(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "drv2.py"), []byte(pythonBlock(t, doc, "# drv2.py")), 0o644); err != nil {
		t.Fatal(err)
	}
	harness := pythonBlock(t, doc, "import hashlib, struct") + pyHarness
	if err := os.WriteFile(filepath.Join(dir, "harness.py"), []byte(harness), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := pythonBlock(t, doc, "import random, socket, time, zmq")
	if err := os.WriteFile(filepath.Join(dir, "worker.py"), []byte(worker), 0o644); err != nil {
		t.Fatal(err)
	}

	fp := func(u string) id.Fingerprint { return id.Key{Crawler: "news", Processor: "html", URL: u}.Fingerprint() }
	toPython := map[string]Message{
		"welcome": &Welcome{Req: 1, Session: 9, Heartbeat: time.Second, Liveness: 3, Slots: 4,
			Limits: ProtocolLimits, Server: "drover 0.4.0", Cancel: []Run{{41, 2}}},
		"error":      &Error{Req: 3, Code: CodeTooLarge, Msg: "SUBMIT item 3 url: too long"},
		"disconnect": &Disconnect{Code: CodeEvicted, Reason: "evicted"},
		"verdicts": &Verdicts{Req: 5, Items: []VerdictItem{
			{fp("https://a.example/"), VerdictOK, ""}, {fp("https://b.example/"), VerdictWait, "requested"}}},
		"answer": &Answer{Req: 5, Items: []VerdictItem{{fp("https://b.example/"), VerdictOK, "handover"}}},
		"submitted": &Submitted{Req: 42, Items: []SubmittedItem{
			{SubmitAccepted, 7, fp("https://example.com/"), ""}, {SubmitDuplicate, 0, fp("https://b/"), "done"},
			{SubmitWait, 0, fp("https://c/"), "requested"}}},
		"job": &Job{Jobs: []JobItem{{JobID: 101, Attempt: 2, Key: id.Key{Crawler: "news", Processor: "html", URL: "https://example.com/"},
			Headers: Headers{{"lang", "en"}}, Payload: []byte("{}")}}},
		"cancel":    &Cancel{Runs: []Run{{101, 1}, {102, 4}}, Reason: "requeued"},
		"result-ok": &ResultOK{Req: 9, Items: []ResultOKItem{{101, 2, ResultRecorded, 1, 0}, {102, 1, ResultStale, 0, 0}}},
		"heartbeat": &Heartbeat{},
	}
	in := map[string][]string{}
	for name, m := range toPython {
		for _, f := range mustEncode(t, m) {
			in[name] = append(in[name], hex.EncodeToString(f))
		}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "harness.py")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var got struct {
		Encoded map[string][]string
		Decoded map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}

	// Python -> Go.
	k := func(c, p, u string) id.Key { return id.Key{Crawler: c, Processor: p, URL: u} }
	fromPython := map[string]Message{
		"hello": &Hello{Req: 1, Role: RoleWorker, ID: "w1", Host: "box", Slots: 4, Heartbeat: time.Second,
			Headers: Headers{{"lang", "en"}}, Held: []Run{{41, 1}, {42, 3}}},
		"console":    &Hello{Req: 2, Role: RoleConsole, ID: "ops", ReadOnly: true},
		"heartbeat":  &Heartbeat{},
		"disconnect": &Disconnect{Code: CodeOK, Reason: "bye"},
		"request":    &Request{Req: 5, Keys: []id.Key{k("news", "html", "https://a.example/"), k("", "", "https://ü.example/ü")}},
		"queue":      &Queue{Req: 6, Keys: []id.Key{k("news", "html", "https://a.example/")}},
		"done":       &Done{Req: 7, Items: []DoneItem{{k("news", "html", "https://a.example/"), DoneFailed}}},
		"submit": &Submit{Req: 42, Jobs: []SubmitItem{
			{Key: k("news", "html", "https://example.com/"), Headers: Headers{{"lang", "en"}}, Payload: []byte(`{"depth":1}`)},
			{Key: k("c", "p", "https://b/")}}},
		"result": &Result{Req: 9, Items: []ResultItem{
			{JobID: 101, Attempt: 2, Outcome: OutcomeOK, Output: []byte("out"), Links: []SubmitItem{{Key: k("news", "html", "https://example.com/b")}}},
			{JobID: 102, Attempt: 1, Outcome: OutcomeThrottled, RetryAfter: 30 * time.Second, Error: "HTTP 429"}}},
		"progress": &Progress{JobID: 101, Attempt: 2, Text: "half"},
	}
	if len(got.Encoded) != len(fromPython) {
		t.Errorf("python encoded %d messages, want %d", len(got.Encoded), len(fromPython))
	}
	for name, want := range fromPython {
		var frames [][]byte
		for _, h := range got.Encoded[name] {
			f, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, f)
		}
		m, err := Decode(frames)
		if err != nil {
			t.Errorf("python %s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(want, m, equateEmpty); diff != "" {
			t.Errorf("python %s decodes differently (-want +got):\n%s", name, diff)
		}
	}

	// Go -> Python.
	h := func(f id.Fingerprint) string { return hex.EncodeToString(f[:]) }
	want := map[string]any{
		"welcome": map[string]any{"command": "WELCOME", "req": 1, "fields": map[string]any{
			"session": 9, "heartbeat_ms": 1000, "liveness": 3, "slots": 4, "max_body": MaxBody,
			"max_batch": MaxBatch, "max_payload": MaxPayload, "server": "drover 0.4.0", "cancel": []any{[]any{41, 2}}}},
		"error":      map[string]any{"command": "ERROR", "req": 3, "fields": map[string]any{"code": 413, "message": "SUBMIT item 3 url: too long"}},
		"disconnect": map[string]any{"command": "DISCONNECT", "req": 0, "fields": map[string]any{"code": 410, "reason": "evicted"}},
		"verdicts": map[string]any{"command": "VERDICTS", "req": 5, "fields": map[string]any{"items": []any{
			map[string]any{"fingerprint": h(fp("https://a.example/")), "verdict": 1, "reason": ""},
			map[string]any{"fingerprint": h(fp("https://b.example/")), "verdict": 3, "reason": "requested"}}}},
		"answer": map[string]any{"command": "ANSWER", "req": 5, "fields": map[string]any{"items": []any{
			map[string]any{"fingerprint": h(fp("https://b.example/")), "verdict": 1, "reason": "handover"}}}},
		"submitted": map[string]any{"command": "SUBMITTED", "req": 42, "fields": map[string]any{"items": []any{
			map[string]any{"status": 1, "job_id": 7, "fingerprint": h(fp("https://example.com/")), "reason": ""},
			map[string]any{"status": 2, "job_id": 0, "fingerprint": h(fp("https://b/")), "reason": "done"},
			map[string]any{"status": 4, "job_id": 0, "fingerprint": h(fp("https://c/")), "reason": "requested"}}}},
		"job": map[string]any{"command": "JOB", "req": 0, "fields": map[string]any{"jobs": []any{
			map[string]any{"job_id": 101, "attempt": 2, "key": []any{"news", "html", "https://example.com/"},
				"headers": []any{[]any{"lang", "en"}}, "payload": hex.EncodeToString([]byte("{}"))}}}},
		"cancel": map[string]any{"command": "CANCEL", "req": 0, "fields": map[string]any{"runs": []any{[]any{101, 1}, []any{102, 4}}, "reason": "requeued"}},
		"result-ok": map[string]any{"command": "RESULT-OK", "req": 9, "fields": map[string]any{"items": []any{
			map[string]any{"job_id": 101, "attempt": 2, "status": 1, "accepted": 1, "duplicates": 0},
			map[string]any{"job_id": 102, "attempt": 1, "status": 2, "accepted": 0, "duplicates": 0}}}},
		"heartbeat":   map[string]any{"command": "HEARTBEAT", "req": 0, "fields": map[string]any{}},
		"truncated":   "refused",
		"fingerprint": h(fp("https://example.com/")),
	}
	// Normalise numbers the way JSON decoding does.
	var norm any
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &norm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(norm, any(got.Decoded)); diff != "" {
		t.Errorf("python decodes Go's messages differently (-want +got):\n%s", diff)
	}

	// The pyzmq worker example at least compiles.
	compile := exec.Command(python, "-m", "py_compile", "worker.py")
	compile.Dir = dir
	if out, err := compile.CombinedOutput(); err != nil {
		t.Errorf("the worker example does not compile: %v\n%s", err, out)
	}
}
