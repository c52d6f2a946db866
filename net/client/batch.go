package client

import (
	"drover/coord/id"
	"drover/net/wire"
)

// span is a range [lo, hi) of a caller's items sent in one message.
type span struct{ lo, hi int }

// spans splits n items into consecutive spans of at most maxCount items
// whose sizes (size(i) bytes each) add up to at most maxBytes, every span
// holding at least one item (a single item over maxBytes travels alone and
// the encoder names the limit it breaks).
func spans(n, maxCount, maxBytes int, size func(i int) int) []span {
	var out []span
	lo, bytes := 0, 0
	for i := range n {
		sz := size(i)
		if i > lo && (i-lo >= maxCount || bytes+sz > maxBytes) {
			out = append(out, span{lo, i})
			lo, bytes = i, 0
		}
		bytes += sz
	}
	if n > lo {
		out = append(out, span{lo, n})
	}
	return out
}

// keySize is a key's encoded size.
func keySize(k *id.Key) int { return 6 + len(k.Crawler) + len(k.Processor) + len(k.URL) }

// submitSize is a submit item's encoded size.
func submitSize(s *wire.SubmitItem) int {
	n := keySize(&s.Key) + 2 + 4 + len(s.Payload)
	for _, h := range s.Headers {
		n += 4 + len(h.Name) + len(h.Value)
	}
	return n
}

// batchLimits are the most records and body bytes (after the count) per
// message, from the server's last WELCOME.
func (e *engine) batchLimits() (count, bytes int) {
	lim := e.limits.Load()
	return int(min(lim.MaxBatch, wire.MaxBatch)), int(min(lim.MaxBody, wire.MaxBody)) - 4
}
