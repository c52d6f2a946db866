package wire

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tables of docs/PROTOCOL.md are checked against this package: every
// command, enumeration value, error code and limit named in Go is in the
// document with the same value, and the document names nothing Go lacks.

// docSection returns the text of the section whose heading starts with
// heading ("## 7."), up to the next heading of the same level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("no section %q in the document", heading)
	}
	rest := doc[i+1:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest[len(heading):], "\n"+level); j >= 0 {
		return rest[:len(heading)+j]
	}
	return rest
}

// tableRows returns the cells of the rows of every markdown table in s
// (header and separator rows left out).
func tableRows(s string) [][]string {
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !inTable { // the header row
			inTable = true
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

func TestProtocolDocCommands(t *testing.T) {
	doc := readDoc(t)
	got := map[string]string{}
	for _, r := range tableRows(strings.SplitN(docSection(t, doc, "## 6."), "Enumerations", 2)[0]) {
		got[r[0]] = r[1] + " " + r[2]
	}
	want := map[string]string{}
	for c := Command(1); c < cmdLimit; c++ {
		info := commands[c]
		body := "none"
		switch {
		case info.json:
			body = "JSON"
		case info.body:
			body = "binary"
		}
		from := map[Side]string{Client: "client", Server: "server", Client | Server: "both"}[info.from]
		want[c.String()] = body + " " + from
		if n := len(c.String()); n < 3 || n > maxCommandName {
			t.Errorf("command %s: %d bytes, the document says 3 to %d", c, n, maxCommandName)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("§6's command table (body, from) differs from the codec (-Go +document):\n%s", diff)
	}
}

func TestProtocolDocEnums(t *testing.T) {
	doc := readDoc(t)
	sec := docSection(t, doc, "## 6.")
	sec = sec[strings.Index(sec, "Enumerations"):]
	sec = sec[strings.Index(sec, "\n|"):]
	got := map[string]string{}
	for _, r := range tableRows(sec[:strings.Index(sec, "\n\n")+1]) {
		got[r[0]] = r[1]
	}
	list := func(names []string) string {
		var parts []string
		for i, n := range names {
			if n != "" {
				parts = append(parts, strconv.Itoa(i)+" "+n)
			}
		}
		return strings.Join(parts, ", ")
	}
	want := map[string]string{
		"HELLO role":       list(roleNames[:]),
		"HELLO flags":      "bit 0: read-only (console only); other bits 0",
		"verdict":          list(verdictNames[:]),
		"DONE outcome":     list(doneOutcomeNames[:]),
		"SUBMITTED status": list(submitStatusNames[:]),
		"RESULT outcome":   list(outcomeNames[:]),
		"RESULT-OK status": list(resultStatusNames[:]),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("§6's enumerations differ from the codec (-Go +document):\n%s", diff)
	}
	// The reference codec's constants use the table's names.
	codec := pythonBlock(t, doc, "# drv2.py")
	for _, names := range [][]string{submitStatusNames[:], resultStatusNames[:]} {
		for i, n := range names {
			if n == "" {
				continue
			}
			re := regexp.MustCompile(`(?m)^[A-Z_, ]*\b(?:[A-Z]+_)?` + strings.ToUpper(n) + `\b[A-Z_, ]* = [0-9, ]+#`)
			if !re.MatchString(codec) {
				t.Errorf("the reference codec has no constant named like %q (value %d)", n, i)
			}
		}
	}
}

func TestProtocolDocErrorCodes(t *testing.T) {
	doc := readDoc(t)
	got := map[string]string{}
	for _, r := range tableRows(docSection(t, doc, "## 7.")) {
		got[r[0]] = r[1]
	}
	want := map[string]string{}
	for c, name := range codeNames {
		want[strconv.Itoa(int(c))] = name
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("§7's codes differ from the codec's (-Go +document):\n%s", diff)
	}
}

// docLimits are §8's rows as Go has them.
var docLimits = map[string]string{
	"frames per message": "3 or 4 (exactly, per command)",
	"body frame":         "16 MiB (" + commas(MaxBody) + " bytes)",
	"command name":       "3 to " + strconv.Itoa(maxCommandName) + " bytes",
	"whole message":      "16 MiB + " + strconv.Itoa(MaxMessage-MaxBody) + " bytes (protocol 4 + command ≤ " + strconv.Itoa(maxCommandName) + " + request id 8 + body)",
	"inbound frame before libzmq drops the connection (`MAXMSGSIZE`)":     "2 × whole message (bigger frames are never buffered)",
	"records per batch (keys, verdicts, jobs, results, acknowledgements)": commas(MaxBatch),
	"links per result / per RESULT message":                               commas(MaxLinksPerResult) + " / " + commas(MaxLinks),
	"runs in `held`, `cancel`, CANCEL; worker slots":                      commas(MaxSlots),
	"crawler, processor":                       commas(MaxName) + " bytes",
	"url":                                      "1 to " + commas(MaxURL) + " bytes",
	"headers per list":                         commas(MaxHeaders),
	"header name / value":                      "1 to " + commas(MaxHeaderName) + " / 0 to " + commas(MaxHeaderValue) + " bytes",
	"payload / output":                         strconv.Itoa(MaxPayload>>20) + " MiB / " + strconv.Itoa(MaxOutput>>20) + " MiB",
	"peer id / host / server name":             "1 to " + commas(MaxID) + " / " + commas(MaxHost) + " / " + commas(MaxHost) + " bytes",
	"verdict and submit reasons":               commas(MaxReason) + " bytes",
	"texts (error, reason, message, progress)": commas(MaxText) + " bytes",
	"admin query limit (rows)":                 commas(MaxBatch),
	"admin filter / action target":             commas(MaxFilter) + " / " + commas(MaxTarget) + " bytes",
	"event topic":                              "1 to " + commas(MaxTopic) + " bytes",
	"ROBOTS content":                           strconv.Itoa(MaxRobots>>10) + " KiB (" + commas(MaxRobots) + " bytes)",
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestProtocolDocLimits(t *testing.T) {
	doc := readDoc(t)
	got := map[string]string{}
	for _, r := range tableRows(docSection(t, doc, "## 8.")) {
		got[r[0]] = r[1]
	}
	if diff := cmp.Diff(docLimits, got); diff != "" {
		t.Errorf("§8's limits differ from the codec's (-Go +document):\n%s", diff)
	}
	if ProtocolLimits.MaxBody != MaxBody || ProtocolLimits.MaxBatch != MaxBatch || ProtocolLimits.MaxPayload != MaxPayload {
		t.Errorf("ProtocolLimits %+v differ from the constants", ProtocolLimits)
	}
	var names []string
	for k := range got {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("§8 rows checked: %d", len(names))
}
