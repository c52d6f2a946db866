package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"drover/admin"
	"drover/coord/id"
	"drover/filter"
)

// The admin commands carry JSON bodies (the types of package admin) and are
// used on the admin socket after a HELLO with role console. Receivers ignore
// JSON members they do not know, so members can be added within DRV/2.

// Query asks for one window of one view (console -> server); PAGE answers.
type Query struct {
	Req   uint64
	Query admin.Query
}

// Command is CmdQuery.
func (m *Query) Command() Command { return CmdQuery }

// RequestID is the id PAGE echoes.
func (m *Query) RequestID() uint64 { return m.Req }

func (m *Query) appendBody(w *writer) { w.json(m.Query) }

func (m *Query) decodeBody(r *reader) {
	if !jsonBody(r, &m.Query) {
		return
	}
	q := &m.Query
	_, filterErr := filter.Parse(q.Filter)
	_, keyErr := id.ParseFingerprint(q.Key)
	switch {
	case !knownView(q.View):
		r.fail(CodeMalformed, "view", "%q, want workers, jobs, waiters, retries, events, results or crawls", q.View)
	case q.Offset < 0:
		r.fail(CodeMalformed, "offset", "%d, want at least 0", q.Offset)
	case q.Limit < 0 || q.Limit > MaxBatch:
		r.fail(CodeMalformed, "limit", "%d, want 0 to %d", q.Limit, MaxBatch)
	case len(q.Sort) > MaxHeaderName || checkKind([]byte(q.Sort), kToken) != "":
		r.fail(CodeMalformed, "sort", "%q, want a column name of at most %d letters, digits and . _ : -", q.Sort, MaxHeaderName)
	case len(q.Filter) > MaxFilter:
		r.fail(CodeTooLarge, "filter", "%d bytes, want at most %d", len(q.Filter), MaxFilter)
	case checkKind([]byte(q.Filter), kLine) != "":
		r.fail(CodeMalformed, "filter", "%s", checkKind([]byte(q.Filter), kLine))
	case filterErr != nil:
		r.fail(CodeMalformed, "filter", "%v", filterErr)
	case q.Key != "" && keyErr != nil && !(q.View == admin.ViewJobs && isJobID(q.Key)):
		if q.View == admin.ViewJobs {
			r.fail(CodeMalformed, "key", "%q, want a key fingerprint (32 hex digits) or a job id (decimal, at least 1)", q.Key)
			return
		}
		r.fail(CodeMalformed, "key", "%v", keyErr)
	}
}

// isJobID reports whether s is a job id written in decimal (view jobs
// takes one as its key: that job's row, with its history).
func isJobID(s string) bool {
	n, err := strconv.ParseUint(s, 10, 64)
	return err == nil && n >= 1
}

func knownView(v admin.View) bool {
	switch v {
	case admin.ViewWorkers, admin.ViewJobs, admin.ViewWaiters, admin.ViewRetries, admin.ViewEvents, admin.ViewResults, admin.ViewCrawls:
		return true
	}
	return false
}

// Page answers QUERY (server -> console).
type Page struct {
	Req  uint64
	Page admin.Page
}

// Command is CmdPage.
func (m *Page) Command() Command { return CmdPage }

// RequestID echoes the QUERY's.
func (m *Page) RequestID() uint64 { return m.Req }

func (m *Page) appendBody(w *writer) { w.json(m.Page) }

func (m *Page) decodeBody(r *reader) { jsonBody(r, &m.Page) }

// Status asks for the totals (console -> server); TOTALS answers.
type Status struct {
	Req uint64
}

// Command is CmdStatus.
func (m *Status) Command() Command { return CmdStatus }

// RequestID is the id TOTALS echoes.
func (m *Status) RequestID() uint64 { return m.Req }

func (m *Status) appendBody(*writer) {}
func (m *Status) decodeBody(*reader) {}

// Totals answers STATUS (server -> console).
type Totals struct {
	Req    uint64
	Totals admin.Totals
}

// Command is CmdTotals.
func (m *Totals) Command() Command { return CmdTotals }

// RequestID echoes the STATUS's.
func (m *Totals) RequestID() uint64 { return m.Req }

func (m *Totals) appendBody(w *writer) { w.json(m.Totals) }

func (m *Totals) decodeBody(r *reader) { jsonBody(r, &m.Totals) }

// Action is an operator command (console -> server); ACTED answers. A
// read-only console gets ERROR 403.
type Action struct {
	Req    uint64
	Action admin.Action
}

// Command is CmdAction.
func (m *Action) Command() Command { return CmdAction }

// RequestID is the id ACTED echoes.
func (m *Action) RequestID() uint64 { return m.Req }

func (m *Action) appendBody(w *writer) { w.json(m.Action) }

func (m *Action) decodeBody(r *reader) {
	if !jsonBody(r, &m.Action) {
		return
	}
	a := &m.Action
	var wantTargets bool
	switch a.Kind {
	case admin.ActEvict, admin.ActDrain, admin.ActUndrain, admin.ActRequeue:
		wantTargets = true
	case admin.ActRequeueFailed, admin.ActPause, admin.ActResume:
	case admin.ActCancel:
		if a.Crawler == "" {
			r.fail(CodeMalformed, "crawler", "empty, want the crawl to cancel")
		}
	case admin.ActDefineCrawl:
		if c := a.Crawl; c == nil {
			r.fail(CodeMalformed, "crawl", "missing, want the crawl's definition for %s", a.Kind)
		} else if len(c.Name) == 0 || len(c.Name) > MaxName || checkKind([]byte(c.Name), kLine) != "" {
			r.fail(CodeMalformed, "crawl.name", "%q, want 1 to %d bytes of text, like a key's crawler", c.Name, MaxName)
		}
	default:
		r.fail(CodeMalformed, "kind", "%q, want evict, drain, undrain, requeue, requeue-failed, pause, resume, cancel or define-crawl", a.Kind)
		return
	}
	switch {
	case r.err != nil:
		return
	case a.Crawler != "" && a.Kind != admin.ActPause && a.Kind != admin.ActResume && a.Kind != admin.ActRequeueFailed && a.Kind != admin.ActCancel:
		r.fail(CodeMalformed, "crawler", "given for %s, want it only with pause, resume, requeue-failed or cancel", a.Kind)
		return
	case len(a.Crawler) > MaxName || checkKind([]byte(a.Crawler), kLine) != "":
		r.fail(CodeMalformed, "crawler", "%q, want at most %d bytes of text, like a key's crawler", a.Crawler, MaxName)
		return
	}
	switch {
	case wantTargets && len(a.Targets) == 0:
		r.fail(CodeMalformed, "targets", "none, want at least one for %s", a.Kind)
	case !wantTargets && len(a.Targets) != 0:
		r.fail(CodeMalformed, "targets", "%d, want none for %s", len(a.Targets), a.Kind)
	case len(a.Targets) > MaxBatch:
		r.fail(CodeTooLarge, "targets", "%d, want at most %d", len(a.Targets), MaxBatch)
	}
	for i, t := range a.Targets {
		if r.err != nil {
			break
		}
		r.item = i
		switch {
		case len(t) == 0 || len(t) > MaxTarget:
			r.fail(CodeMalformed, "target", "%d bytes, want 1 to %d", len(t), MaxTarget)
		case checkKind([]byte(t), kLine) != "":
			r.fail(CodeMalformed, "target", "%s", checkKind([]byte(t), kLine))
		}
	}
	r.item = -1
}

// Acted answers ACTION (server -> console).
type Acted struct {
	Req    uint64
	Result admin.ActionResult
}

// Command is CmdActed.
func (m *Acted) Command() Command { return CmdActed }

// RequestID echoes the ACTION's.
func (m *Acted) RequestID() uint64 { return m.Req }

func (m *Acted) appendBody(w *writer) { w.json(m.Result) }

func (m *Acted) decodeBody(r *reader) { jsonBody(r, &m.Result) }

// Changed tells a console that state changed (server -> console), so it
// queries again instead of polling. Servers coalesce them: at most one per
// heartbeat interval or so. No body, no reply.
type Changed struct {
	Req uint64 // 0
}

// Command is CmdChanged.
func (m *Changed) Command() Command { return CmdChanged }

// RequestID is 0 by convention.
func (m *Changed) RequestID() uint64 { return m.Req }

func (m *Changed) appendBody(*writer) {}
func (m *Changed) decodeBody(*reader) {}

func (w *writer) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.fail(CodeMalformed, "body", "%v", err)
		return
	}
	w.b = append(w.b, b...)
}

// jsonBody decodes a JSON body into *v, zeroed first, on the first pass
// (the second has nothing left to fill); it reports whether *v holds a
// body just decoded, for the caller's checks.
func jsonBody[T any](r *reader, v *T) bool {
	if r.fill {
		return false
	}
	var zero T
	*v = zero
	return r.json(v)
}

// json decodes the whole body as one JSON value into v (first pass only).
func (r *reader) json(v any) bool {
	if !utf8.Valid(r.b) {
		r.fail(CodeMalformed, "body", "invalid UTF-8, want a JSON document")
		return false
	}
	if err := json.Unmarshal(r.b, v); err != nil {
		r.fail(CodeMalformed, "body", "bad JSON: %v", err)
		return false
	}
	r.off = len(r.b)
	return true
}
