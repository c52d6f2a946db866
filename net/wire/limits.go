package wire

import (
	"time"

	"drover/filter"
)

// Protocol is the content of frame 0 of every DRV/2 message.
const Protocol = "DRV2"

// Limits of DRV/2. Decode enforces all of them; Encode refuses to produce a
// message that breaks one. A server may announce lower limits in WELCOME.
const (
	// MaxFrames is the most frames a message has as a DEALER sends it
	// (protocol, command, request id, body).
	MaxFrames = 4
	// MaxBody is the largest body frame, in bytes.
	MaxBody = 16 << 20
	// MaxMessage is the largest message: the body plus the protocol (4),
	// command (at most 10) and request id (8) frames.
	MaxMessage = MaxBody + 4 + maxCommandName + 8
	// MaxBatch is the most records in one batch (keys, jobs, results,
	// verdicts, job ids, action targets, page rows asked for).
	MaxBatch = 10000
	// MaxLinksPerResult is the most discovered links one result carries.
	MaxLinksPerResult = 10000
	// MaxLinks is the most discovered links in one RESULT message, all
	// results together.
	MaxLinks = 100000
	// MaxName is the longest crawler or processor name, in bytes.
	MaxName = 255
	// MaxURL is the longest URL, in bytes.
	MaxURL = 8192
	// MaxHeaders is the most headers in one header list.
	MaxHeaders = 64
	// MaxHeaderName is the longest header name, in bytes.
	MaxHeaderName = 128
	// MaxHeaderValue is the longest header value, in bytes.
	MaxHeaderValue = 1024
	// MaxPayload is the largest job payload, in bytes.
	MaxPayload = 1 << 20
	// MaxOutput is the largest job output in a result, in bytes.
	MaxOutput = 4 << 20
	// MaxID is the longest stable peer id in HELLO, in bytes.
	MaxID = 128
	// MaxHost is the longest host name (HELLO) or server name (WELCOME).
	MaxHost = 255
	// MaxReason is the longest reason token of a verdict or submit reply.
	MaxReason = 255
	// MaxText is the longest human text: error messages, disconnect and
	// cancel reasons, a result's error text, progress text.
	MaxText = 4096
	// MaxSlots is the most slots a worker may announce, and so the most
	// job ids a HELLO, WELCOME or CANCEL lists.
	MaxSlots = 4096
	// MaxTopic is the longest event topic, in bytes.
	MaxTopic = 64
	// MaxFilter is the longest filter text of an admin query, in bytes.
	MaxFilter = filter.MaxLen
	// MaxTarget is the longest target of an admin action, in bytes.
	MaxTarget = 255
	// MaxHeartbeat is the longest heartbeat interval the wire can carry
	// (2^32-1 ms); servers clamp proposals to a much smaller range.
	MaxHeartbeat = time.Duration(1<<32-1) * time.Millisecond
	// MaxRetryAfter is the longest retry-after a result can carry.
	MaxRetryAfter = time.Duration(1<<32-1) * time.Millisecond

	maxCommandName = 10 // DISCONNECT
)

// Clip cuts s to at most n bytes (none for a negative n) on a UTF-8 rune
// boundary, so that a text fits its limit (MaxText, MaxReason) and stays
// valid UTF-8.
func Clip(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
