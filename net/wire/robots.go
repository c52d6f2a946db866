package wire

import "time"

// MaxRobots is the largest robots.txt body a ROBOTS message carries: the
// 512 KiB RFC 9309 asks a crawler to parse at least.
const MaxRobots = 512 << 10

// RobotsHeader is the worker capability header (HELLO headers) saying the
// worker takes ROBOTS from the server: robots.txt copies it uses instead
// of fetching the file itself.
const RobotsHeader = "drv.robots"

// Robots carries one origin's robots.txt between the fleet's members
// (PROTOCOL.md §6.18). A worker that fetched the file reports it to the
// server; the server sends its copy to a worker before a JOB of that
// origin, so the fleet fetches each robots.txt once per expiry. No reply;
// an old server answers ERROR 501 (Req lets the worker match it).
type Robots struct {
	// Req is chosen by a worker (any value; 0 allowed) so that an ERROR
	// names its ROBOTS; the server sends 0.
	Req uint64
	// Origin is scheme://host[:port] of the normalised URLs it applies
	// to (PROTOCOL.md §4.1), without a path.
	Origin string
	// TTL is how long from now the copy may be used.
	TTL time.Duration
	// CrawlDelay is the Crawl-delay the sender read in it for its
	// product token (0: none).
	CrawlDelay time.Duration
	// Content is the robots.txt as fetched (at most MaxRobots bytes); empty
	// allows everything (the site answered 4xx).
	Content []byte
}

// Command is CmdRobots.
func (m *Robots) Command() Command { return CmdRobots }

// RequestID is the worker's id, or 0.
func (m *Robots) RequestID() uint64 { return m.Req }

func (m *Robots) appendBody(w *writer) {
	w.str("origin", m.Origin)
	w.ms("ttl", m.TTL)
	w.ms("crawl delay", m.CrawlDelay)
	if len(m.Content) > MaxRobots {
		w.fail(CodeTooLarge, "content", "%d bytes, want at most %d", len(m.Content), MaxRobots)
		return
	}
	w.blob("content", m.Content)
}

func (m *Robots) decodeBody(r *reader) {
	m.Origin = r.str("origin", kLine, 1, MaxURL)
	m.TTL = r.ms("ttl")
	if r.err == nil && m.TTL == 0 {
		r.fail(CodeMalformed, "ttl", "0, want at least 1 ms")
	}
	m.CrawlDelay = r.ms("crawl delay")
	m.Content = r.blob("content", MaxRobots)
	r.end()
}
