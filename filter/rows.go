package filter

import (
	"drover/admin"
	"drover/coord/id"
)

// What each view's rows offer a filter. A coordinator that answers from
// its own indexes must agree with these (the contract test in net/server
// checks it over the admin socket).

// Job reports whether a job row (views jobs and retries) matches. Its free
// text is the URL; its fields are state, host (of the URL), worker (the
// worker running it), crawler, processor, key and wait (a job that does
// not wait has the empty word, which no term matches).
func (f Filter) Job(r *admin.JobRow) bool {
	return f.Match(func(n Field) (string, bool) {
		switch n {
		case FieldState:
			return r.State, true
		case FieldHost:
			return id.Host(r.URL), true
		case FieldWorker:
			return r.Worker, true
		case FieldCrawler:
			return r.Crawler, true
		case FieldProcessor:
			return r.Processor, true
		case FieldKey:
			return r.Key, true
		case FieldWait:
			return string(r.Wait), true
		}
		return "", false
	}, r.URL)
}

// Worker reports whether a worker row matches. Its free text is the id and
// the host; its fields are state, host and worker (the id).
func (f Filter) Worker(r *admin.WorkerRow) bool {
	return f.Match(func(n Field) (string, bool) {
		switch n {
		case FieldState:
			return r.State, true
		case FieldHost:
			return r.Host, true
		case FieldWorker:
			return r.ID, true
		}
		return "", false
	}, r.ID, r.Host)
}

// Event reports whether an event matches. Its free text is the kind, URL,
// worker and detail; its fields are kind, host (of the URL), worker and
// key.
func (f Filter) Event(e *admin.Event) bool {
	return f.Match(func(n Field) (string, bool) {
		switch n {
		case FieldKind:
			return string(e.Kind), true
		case FieldHost:
			return id.Host(e.URL), true
		case FieldWorker:
			return e.Worker, true
		case FieldKey:
			return e.Key, true
		}
		return "", false
	}, string(e.Kind), e.URL, e.Worker, e.Detail)
}

// Waiter reports whether a waiter row matches. Its free text is the
// session; it has no fields.
func (f Filter) Waiter(r *admin.WaiterRow) bool {
	return f.Match(func(Field) (string, bool) { return "", false }, r.Session)
}
