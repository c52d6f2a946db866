package server

import (
	"bytes"
	"strings"

	"drover/coord"
	"drover/net/wire"
)

// Memory per queued job independent of how it was submitted (issue 14).
// A decoded message's strings are slices of one allocation per message,
// and its blobs alias the body (package wire: it allocates per message, not
// per field). A job that kept them would keep its whole message alive: the
// jobs of a 10,000-item SUBMIT would pin its every byte until the last of
// them is done, and a link's key would pin its RESULT, page output
// included. So what a job keeps is copied out of the message first: the
// URL and the payload into allocations of their own, and the short strings
// that many jobs repeat (crawler, processor, header names and values)
// through an interner, one copy each.

// interner keeps one copy of short strings that recur.
type interner struct{ m map[string]string }

// Bounds of the interner: longer strings are copied, not kept; past
// internMax entries new ones are copied, not kept either.
const (
	internLen = 256
	internMax = 4096
)

// get returns s as a string of its own (not aliasing a message).
func (in *interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(s) <= internLen && len(in.m) < internMax {
		if in.m == nil {
			in.m = make(map[string]string)
		}
		in.m[v] = v
	}
	return v
}

// spec is the job spec of a submit item, sharing nothing with the
// message it came in (cloneURL false: the URL is kept as it is, for items
// handed over in memory by an in-process peer, which alias no message).
func (in *interner) spec(it *wire.SubmitItem, cloneURL bool) coord.JobSpec {
	sp := coord.JobSpec{Key: it.Key}
	sp.Key.Crawler = in.get(it.Key.Crawler)
	sp.Key.Processor = in.get(it.Key.Processor)
	if cloneURL {
		sp.Key.URL = strings.Clone(it.Key.URL)
	}
	if len(it.Headers) > 0 {
		sp.Headers = make(map[string]string, len(it.Headers))
		for _, h := range it.Headers {
			sp.Headers[in.get(h.Name)] = in.get(h.Value)
		}
	}
	if len(it.Payload) > 0 {
		sp.Payload = bytes.Clone(it.Payload)
	}
	return sp
}
