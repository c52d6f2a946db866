package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
)

// The tests in this file read the kit as a third-party implementer does:
// every stored vector goes through drover's Go codec and must mean what the
// file says, so a vector edited by hand (frames, meaning, code, URL or
// body) is caught here, not only as a difference from the regenerated kit
// (conformance_test.go). They run after the generating tests, so under
// -update they check the files just written.

// readKit decodes a kit file into v.
func readKit(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run go test ./conformance -update to write the kit)", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// unhex decodes a vector's hex frames.
func unhex(t *testing.T, name string, frames []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(frames))
	for i, f := range frames {
		b, err := hex.DecodeString(f)
		if err != nil {
			t.Fatalf("%s: frame %d: %v", name, i, err)
		}
		if hex.EncodeToString(b) != f {
			t.Errorf("%s: frame %d is not lower-case hex", name, i)
		}
		out[i] = b
	}
	return out
}

// asJSON renders v as generic JSON values (numbers as json.Number), the
// form readKit gives the file's members, so the two compare exactly.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoredFrames: each frame vector decodes through wire.Decode to a
// message of its command and request id whose meaning is the vector's
// fields, and encodes back to the same frames.
func TestStoredFrames(t *testing.T) {
	var kit struct {
		Protocol string `json:"protocol"`
		Vectors  []struct {
			Name    string         `json:"name"`
			Command string         `json:"command"`
			Req     json.Number    `json:"req"`
			Frames  []string       `json:"frames"`
			Fields  map[string]any `json:"fields"`
		} `json:"vectors"`
	}
	readKit(t, "frames.json", &kit)
	if kit.Protocol != wire.Protocol {
		t.Errorf("frames.json protocol %q, want %q", kit.Protocol, wire.Protocol)
	}
	if len(kit.Vectors) == 0 {
		t.Fatal("frames.json has no vectors")
	}
	seen := map[string]bool{}
	for _, v := range kit.Vectors {
		if seen[v.Name] {
			t.Errorf("two frame vectors named %s", v.Name)
		}
		seen[v.Name] = true
		frames := unhex(t, v.Name, v.Frames)
		m, err := wire.Decode(frames)
		if err != nil {
			t.Errorf("%s: the Go codec refuses the stored frames: %v", v.Name, err)
			continue
		}
		if got := m.Command().String(); got != v.Command {
			t.Errorf("%s: decodes as %s, the file says %s", v.Name, got, v.Command)
		}
		if got := asJSON(t, m.RequestID()); got != v.Req {
			t.Errorf("%s: request id %s, the file says %s", v.Name, got, v.Req)
		}
		if diff := cmp.Diff(asJSON(t, v.Fields), asJSON(t, meaning(m))); diff != "" {
			t.Errorf("%s: the decoded meaning differs from the file's fields (-file +decoded):\n%s", v.Name, diff)
		}
		again, err := wire.Encode(m)
		if err != nil {
			t.Errorf("%s: encode the decoded message: %v", v.Name, err)
			continue
		}
		if got := hexFrames(again); !slices.Equal(got, v.Frames) {
			t.Errorf("%s: encodes back to other frames:\n got %v\nfile %v", v.Name, got, v.Frames)
		}
	}
}

// TestStoredErrors: each error vector is refused by wire.Decode with the
// vector's code, and with its request id when frame 2 is readable.
func TestStoredErrors(t *testing.T) {
	var kit struct {
		Vectors []struct {
			Name   string   `json:"name"`
			Frames []string `json:"frames"`
			Fill   *fill    `json:"fill"`
			Code   int      `json:"code"`
			Req    uint64   `json:"req"`
		} `json:"vectors"`
	}
	readKit(t, "errors.json", &kit)
	if len(kit.Vectors) == 0 {
		t.Fatal("errors.json has no vectors")
	}
	for _, v := range kit.Vectors {
		if v.Fill != nil && (v.Fill.Frame >= len(v.Frames) || v.Fill.Size < len(v.Frames[v.Fill.Frame])/2) {
			t.Errorf("%s: fill %+v: want a frame of the vector, padded to at least its stored size", v.Name, *v.Fill)
			continue
		}
		frames := padded(unhex(t, v.Name, v.Frames), v.Fill)
		_, err := wire.Decode(frames)
		var we *wire.Error
		if !errors.As(err, &we) {
			t.Errorf("%s: the Go codec accepts the stored frames (err %v), the file says code %d", v.Name, err, v.Code)
			continue
		}
		if int(we.Code) != v.Code {
			t.Errorf("%s: code %d (%s), the file says %d", v.Name, we.Code, we.Msg, v.Code)
		}
		var req uint64
		if len(frames) >= 3 && len(frames[2]) == 8 {
			req = binary.BigEndian.Uint64(frames[2])
		}
		if req != v.Req {
			t.Errorf("%s: request id %d in frame 2, the file says %d", v.Name, req, v.Req)
		}
	}
}

// TestStoredURLs: each URL vector's input normalises (with the file's
// crawler and processor) to its stored form and fingerprint, or is refused
// with the stored reason token.
func TestStoredURLs(t *testing.T) {
	var kit struct {
		Crawler   string `json:"crawler"`
		Processor string `json:"processor"`
		Vectors   []struct {
			Input       string `json:"input"`
			Normalized  string `json:"normalized"`
			Fingerprint string `json:"fingerprint"`
			Reason      string `json:"reason"`
		} `json:"vectors"`
	}
	readKit(t, "url.json", &kit)
	if len(kit.Vectors) == 0 {
		t.Fatal("url.json has no vectors")
	}
	for _, v := range kit.Vectors {
		k, err := id.NewKey(kit.Crawler, kit.Processor, v.Input)
		switch {
		case err != nil && v.Reason == "":
			t.Errorf("%q: refused (%v), the file says %q", v.Input, err, v.Normalized)
		case err != nil && v.Reason != string(coord.ReasonBadKey):
			t.Errorf("%q: refused with %s, the file says %q", v.Input, coord.ReasonBadKey, v.Reason)
		case err == nil && v.Reason != "":
			t.Errorf("%q: accepted as %q, the file says refused (%s)", v.Input, k.URL, v.Reason)
		case err == nil:
			fp := k.Fingerprint()
			if got := hex.EncodeToString(fp[:]); k.URL != v.Normalized || got != v.Fingerprint {
				t.Errorf("%q: %q %s, the file says %q %s", v.Input, k.URL, got, v.Normalized, v.Fingerprint)
			}
		}
	}
}

// TestStoredAdmin: each admin body decodes into the Go type its schema
// names, with no member the type lacks, and encodes back to the same JSON.
func TestStoredAdmin(t *testing.T) {
	var kit struct {
		Vectors []struct {
			Name   string          `json:"name"`
			Schema string          `json:"schema"`
			Body   json.RawMessage `json:"body"`
		} `json:"vectors"`
	}
	readKit(t, "admin.json", &kit)
	if len(kit.Vectors) == 0 {
		t.Fatal("admin.json has no vectors")
	}
	types := map[string]reflect.Type{}
	for _, typ := range adminTypes {
		types[typ.Name()] = typ
	}
	for _, v := range kit.Vectors {
		typ, ok := types[v.Schema]
		if !ok {
			t.Errorf("%s: schema %q names no admin type", v.Name, v.Schema)
			continue
		}
		body := reflect.New(typ)
		d := json.NewDecoder(bytes.NewReader(v.Body))
		d.DisallowUnknownFields()
		if err := d.Decode(body.Interface()); err != nil {
			t.Errorf("%s: does not decode as admin.%s: %v", v.Name, v.Schema, err)
			continue
		}
		if diff := cmp.Diff(asJSON(t, v.Body), asJSON(t, body.Elem().Interface())); diff != "" {
			t.Errorf("%s: admin.%s encodes the decoded body otherwise (-file +Go):\n%s", v.Name, v.Schema, diff)
		}
	}
}
