package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"drover/coord/id"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var equateEmpty = cmpopts.EquateEmpty()

func mustEncode(t testing.TB, m Message) [][]byte {
	t.Helper()
	frames, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode(%s): %v", m.Command(), err)
	}
	return frames
}

func TestRoundTrip(t *testing.T) {
	var enc Encoder
	for i, m := range samples() {
		t.Run(m.Command().String(), func(t *testing.T) {
			frames := mustEncode(t, m)
			if got, want := len(frames), 3; m.Command().HasBody() {
				if len(frames) != 4 {
					t.Fatalf("sample %d: %d frames, want 4", i, got)
				}
			} else if got != want {
				t.Fatalf("sample %d: %d frames, want %d", i, got, want)
			}
			if string(frames[0]) != "DRV2" || string(frames[1]) != m.Command().String() {
				t.Fatalf("frames 0,1 = %q %q", frames[0], frames[1])
			}
			back, err := Decode(frames)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(m, back, equateEmpty); diff != "" {
				t.Fatalf("round trip changed the message (-sent +decoded):\n%s", diff)
			}
			// The reusing encoder produces the same bytes.
			again, err := enc.Encode(m)
			if err != nil {
				t.Fatalf("Encoder.Encode: %v", err)
			}
			for j := range frames {
				if !bytes.Equal(frames[j], again[j]) {
					t.Fatalf("frame %d differs between Encode and Encoder.Encode", j)
				}
			}
		})
	}
}

func TestSamplesCoverEveryCommand(t *testing.T) {
	seen := map[Command]bool{}
	for _, m := range samples() {
		seen[m.Command()] = true
	}
	for _, c := range Commands() {
		if !seen[c] {
			t.Errorf("no sample for %s", c)
		}
		if got := lookupCommand([]byte(c.String())); got != c {
			t.Errorf("lookupCommand(%q) = %v, want %v", c.String(), got, c)
		}
		if newMessage(c, 5).RequestID() != 5 || newMessage(c, 5).Command() != c {
			t.Errorf("newMessage(%s) is wrong", c)
		}
		if c.From() == 0 || c.On() == 0 {
			t.Errorf("%s has no side or socket", c)
		}
	}
}

// A decoded message's fields must not change when the frames it came from
// are reused for the next message, except byte fields, which alias the body
// as documented.
func TestDecodedStringsDoNotAliasFrames(t *testing.T) {
	frames := mustEncode(t, &Submit{Req: 1, Jobs: submitItems(2, 4)})
	m, err := Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	sub := m.(*Submit)
	url := strings.Clone(sub.Jobs[0].Key.URL)
	for i := range frames[3] {
		frames[3][i] = 'X'
	}
	if sub.Jobs[0].Key.URL != url {
		t.Fatalf("URL changed with the frame: %q", sub.Jobs[0].Key.URL)
	}
	if string(sub.Jobs[0].Payload) != "XXXX" {
		t.Fatalf("payload %q does not alias the body", sub.Jobs[0].Payload)
	}
	if cap(sub.Jobs[0].Payload) != len(sub.Jobs[0].Payload) {
		t.Fatalf("payload capacity %d, want its length %d", cap(sub.Jobs[0].Payload), len(sub.Jobs[0].Payload))
	}
}

func TestEncodeRefusesWhatDecodeRefuses(t *testing.T) {
	long := strings.Repeat("u", MaxURL+1)
	tests := []struct {
		name string
		m    Message
		code Code
		want string
	}{
		{"url too long", &Request{Req: 1, Keys: []id.Key{{URL: "https://x/" + long}}}, CodeTooLarge, "url"},
		{"string over u16", &Request{Req: 1, Keys: []id.Key{{URL: strings.Repeat("u", 70000)}}}, CodeTooLarge, "url"},
		{"empty batch", &Request{Req: 1}, CodeMalformed, "count"},
		{"empty url", &Queue{Req: 1, Keys: []id.Key{{Crawler: "c"}}}, CodeMalformed, "url"},
		{"bad utf8", &Request{Req: 1, Keys: []id.Key{{URL: "https://x/\xff"}}}, CodeMalformed, "UTF-8"},
		{"negative heartbeat", &Hello{Role: RoleProducer, ID: "p", Heartbeat: -time.Second}, CodeMalformed, "heartbeat"},
		{"unknown role", &Hello{Role: 0, ID: "p"}, CodeMalformed, "role"},
		{"worker without slots", &Hello{Role: RoleWorker, ID: "w"}, CodeMalformed, "slots"},
		{"payload too large", &Submit{Jobs: []SubmitItem{{Key: key(1), Payload: make([]byte, MaxPayload+1)}}}, CodeTooLarge, "payload"},
		{"wait in answer", &Answer{Items: []VerdictItem{{Verdict: VerdictWait}}}, CodeMalformed, "wait"},
		{"zero job id", &Progress{}, CodeMalformed, "job id"},
		{"zero attempt", &Progress{JobID: 1}, CodeMalformed, "attempt"},
		{"zero attempt in a result", &Result{Items: []ResultItem{{JobID: 1, Outcome: OutcomeOK}}}, CodeMalformed, "attempt"},
		{"zero attempt in held", &Hello{Role: RoleWorker, ID: "w", Slots: 1, Held: []Run{{JobID: 1}}}, CodeMalformed, "attempt"},
		{"error code 200", &Error{Code: 200}, CodeMalformed, "code"},
		{"duplicate header", &Job{Jobs: []JobItem{{JobID: 1, Attempt: 1, Key: key(1), Headers: Headers{{"a", "1"}, {"a", "2"}}}}}, CodeMalformed, "twice"},
		{"unknown view", &Query{}, CodeMalformed, "view"},
		{"pause with targets", &Action{Action: actionOf("pause", "x")}, CodeMalformed, "targets"},
		{"body too large", &Submit{Jobs: submitItems(17, MaxPayload)}, CodeTooLarge, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(tt.m)
			if err == nil {
				t.Fatal("Encode accepted it")
			}
			var we *Error
			if !errors.As(err, &we) || we.Code != tt.code {
				t.Fatalf("error %v, want a *Error with code %d", err, tt.code)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
	if _, err := Encode(nil); err == nil {
		t.Fatal("Encode(nil) succeeded")
	}
}

func TestDurationsAreWholeMilliseconds(t *testing.T) {
	m := &Hello{Req: 1, Role: RoleProducer, ID: "p", Heartbeat: 1500*time.Microsecond + 999*time.Nanosecond}
	back, err := Decode(mustEncode(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.(*Hello).Heartbeat; got != time.Millisecond {
		t.Fatalf("heartbeat %v, want 1ms (truncated)", got)
	}
}

func TestErrorHelpers(t *testing.T) {
	err := error(&Error{Req: 3, Code: CodeNotFound, Msg: "job 7"})
	wrapped := errors.Join(errors.New("context"), err)
	if !IsCode(wrapped, CodeNotFound) || IsCode(wrapped, CodeMalformed) || CodeOf(errors.New("x")) != 0 {
		t.Fatal("IsCode/CodeOf disagree with the chain")
	}
	if got := err.Error(); got != "drv 404 not found: job 7" {
		t.Fatalf("Error() = %q", got)
	}
	if Code(499).String() != "code 499" || CodeSlowDown.String() != "slow down" {
		t.Fatal("Code.String")
	}
}

func TestEnumNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{RoleConsole.String(), "console"},
		{Role(0).String(), "unknown(0)"},
		{VerdictWait.String(), "wait"},
		{DoneFailed.String(), "failed"},
		{SubmitDuplicate.String(), "duplicate"},
		{OutcomeThrottled.String(), "throttled"},
		{ResultStale.String(), "stale"},
		{Outcome(9).String(), "unknown(9)"},
		{CmdResultOK.String(), "RESULT-OK"},
		{Command(200).String(), "Command(200)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestHeaders(t *testing.T) {
	h := Headers{{"a", "1"}, {"b", ""}}
	if v, ok := h.Get("b"); !ok || v != "" {
		t.Fatal("Get(b)")
	}
	if _, ok := h.Get("c"); ok {
		t.Fatal("Get(c) found something")
	}
	if diff := cmp.Diff(map[string]string{"a": "1", "b": ""}, h.Map()); diff != "" {
		t.Fatal(diff)
	}
	if Headers(nil).Map() != nil {
		t.Fatal("nil headers give a map")
	}
}

func TestJSONCommandsAreMarked(t *testing.T) {
	for _, c := range Commands() {
		want := c == CmdQuery || c == CmdPage || c == CmdTotals || c == CmdAction || c == CmdActed
		if commands[c].json != want {
			t.Errorf("%s: json %v, want %v", c, commands[c].json, want)
		}
	}
}
