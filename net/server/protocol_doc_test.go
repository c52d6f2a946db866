package server

import (
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"drover/admin"
	"drover/coord"

	"github.com/google/go-cmp/cmp"
)

// docs/PROTOCOL.md's tables of event kinds, close reasons, verdict reasons
// and admin JSON members are checked against the Go definitions, both ways.

func protocolDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markedTable returns the rows (cells trimmed) of the table right after the
// line "<!-- marker -->".
func markedTable(t *testing.T, doc, marker string) [][]string {
	t.Helper()
	i := strings.Index(doc, "<!-- "+marker+" -->\n")
	if i < 0 {
		t.Fatalf("no <!-- %s --> table in the document", marker)
	}
	return tableAt(doc[i+len("<!-- "+marker+" -->\n"):])
}

// tableAt returns the body rows of the markdown table s starts with.
func tableAt(s string) [][]string {
	var rows [][]string
	for n, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n < 2 {
			continue // header and separator
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

func unquote(cell string) string { return strings.Trim(strings.Fields(cell + " x")[0], "`") }

func TestProtocolDocEventKinds(t *testing.T) {
	var doc []string
	for _, r := range markedTable(t, protocolDoc(t), "event-kinds") {
		doc = append(doc, unquote(r[0]))
	}
	var want []string
	for _, k := range admin.EventKinds() {
		want = append(want, k.String())
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("§14's event kinds differ from admin.EventKinds (-Go +document):\n%s", diff)
	}
}

func TestProtocolDocCloseReasons(t *testing.T) {
	got := map[string]string{}
	for _, r := range markedTable(t, protocolDoc(t), "close-reasons") {
		got[unquote(r[0])] = r[1]
	}
	want := map[string]string{}
	for _, r := range coord.CloseReasons() {
		if r == coord.CloseDisconnected {
			continue // the peer said DISCONNECT: no reply (§6.4), so no row
		}
		d := disconnect(r)
		if d.Code == 500 {
			t.Errorf("close reason %s has no DISCONNECT code in closeCodes", r)
		}
		want[d.Reason] = strconv.Itoa(int(d.Code))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("§6.4's close reasons differ from coord.CloseReasons and closeCodes (-Go +document):\n%s", diff)
	}
}

func TestProtocolDocReasons(t *testing.T) {
	var doc []string
	for _, r := range markedTable(t, protocolDoc(t), "reasons") {
		tok := r[0]
		if strings.HasPrefix(tok, "`` ") {
			tok = ""
		}
		doc = append(doc, strings.Trim(tok, "`"))
	}
	var want []string
	for _, r := range coord.WireReasons {
		want = append(want, r.String())
	}
	slices.Sort(doc)
	slices.Sort(want)
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("§6.8's reasons differ from coord.WireReasons (-Go +document):\n%s", diff)
	}
}

// TestProtocolDocAdminBodies: every JSON member of the admin types is in
// its table in §13/§14, and every member there is in the type.
func TestProtocolDocAdminBodies(t *testing.T) {
	doc := protocolDoc(t)
	for _, v := range []any{admin.Query{}, admin.Page{}, admin.Totals{}, admin.Action{}, admin.ActionResult{},
		admin.WorkerRow{}, admin.JobRow{}, admin.Attempt{}, admin.WaiterRow{}, admin.HostRow{}, admin.Event{}, admin.Result{}, admin.Crawl{}} {
		rt := reflect.TypeOf(v)
		marker := "(`admin." + rt.Name() + "`)"
		i := strings.LastIndex(doc, "**"+rt.Name()+"** "+marker)
		if i < 0 {
			t.Errorf("no table for %s: want a line starting **%s** %s", rt.Name(), rt.Name(), marker)
			continue
		}
		rest := doc[i:]
		rest = rest[strings.Index(rest, "\n|")+1:]
		var got, want []string
		for _, r := range tableAt(rest) {
			for _, name := range strings.Split(r[0], ", ") { // a row may name several members
				got = append(got, unquote(name))
			}
		}
		for f := range rt.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want = append(want, name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("§13's %s members differ from admin.%s (-Go +document):\n%s", rt.Name(), rt.Name(), diff)
		}
	}
}
