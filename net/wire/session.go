package wire

import "time"

// Hello opens a session (client -> server). Nothing else is accepted from a
// peer before it. A worker lists the jobs it still holds when it reconnects.
type Hello struct {
	Req      uint64
	Role     Role
	ReadOnly bool   // console only: the session may not run actions
	ID       string // stable peer id, 1..MaxID bytes of printable text
	Host     string // the peer's host name, for operators
	// Slots is how many jobs a worker runs at once (1..MaxSlots); 0 for
	// producers and consoles.
	Slots uint32
	// Heartbeat is the proposed interval, whole milliseconds; 0 leaves the
	// choice to the server. The server answers with the one it accepts.
	Heartbeat time.Duration
	Headers   Headers // worker capabilities; none for other roles
	Held      []Run   // worker: runs received and not yet acknowledged
}

// Command is CmdHello.
func (m *Hello) Command() Command { return CmdHello }

// RequestID is the id WELCOME (or ERROR) echoes.
func (m *Hello) RequestID() uint64 { return m.Req }

const flagReadOnly = 1

func (m *Hello) appendBody(w *writer) {
	w.u8(uint8(m.Role))
	var flags uint8
	if m.ReadOnly {
		flags |= flagReadOnly
	}
	w.u8(flags)
	w.str("id", m.ID)
	w.str("host", m.Host)
	w.u32(m.Slots)
	w.ms("heartbeat", m.Heartbeat)
	w.headers(m.Headers)
	w.runs("held count", m.Held)
}

func (m *Hello) decodeBody(r *reader) {
	m.Role = Role(r.enum("role", validRole, roleNames[:]))
	flags := r.u8("flags")
	if r.err == nil && flags&^flagReadOnly != 0 {
		r.fail(CodeMalformed, "flags", "0x%02x, want only bit 0 (read-only)", flags)
	}
	m.ReadOnly = flags&flagReadOnly != 0
	m.ID = r.str("id", kLine, 1, MaxID)
	m.Host = r.str("host", kLine, 0, MaxHost)
	m.Slots = r.u32("slots")
	m.Heartbeat = r.ms("heartbeat")
	before := r.nHeaders
	m.Headers = r.headers()
	nHeaders := r.nHeaders - before
	var nHeld int
	m.Held, nHeld = r.runs("held count", "held", MaxSlots)
	r.end()
	if r.err != nil || r.fill {
		return
	}
	switch {
	case m.Role == RoleWorker && (m.Slots < 1 || m.Slots > MaxSlots):
		r.fail(CodeMalformed, "slots", "%d, want 1 to %d for a worker", m.Slots, MaxSlots)
	case m.Role != RoleWorker && m.Slots != 0:
		r.fail(CodeMalformed, "slots", "%d, want 0 for a %s", m.Slots, m.Role)
	case m.Role != RoleWorker && nHeaders != 0:
		r.fail(CodeMalformed, "header count", "%d, want 0 for a %s", nHeaders, m.Role)
	case m.Role != RoleWorker && nHeld != 0:
		r.fail(CodeMalformed, "held count", "%d, want 0 for a %s", nHeld, m.Role)
	case m.Role != RoleConsole && m.ReadOnly:
		r.fail(CodeMalformed, "flags", "read-only set, want it only for a console")
	}
}

// Welcome accepts a session (server -> client), answering HELLO.
type Welcome struct {
	Req       uint64
	Session   uint64        // the server's number for this session, for logs
	Heartbeat time.Duration // the interval both sides use, whole milliseconds
	Liveness  uint16        // heartbeats missed before the peer counts as lost
	Slots     uint32        // worker: slots the server will fill; 0 otherwise
	Limits    Limits        // the server's limits, at most the protocol's
	Server    string        // server software and version
	// Cancel lists held runs (from HELLO) the worker must abandon: they
	// are not the job's current attempt on this worker any more
	// (reassigned, requeued, finished) or unknown.
	Cancel []Run
}

// Limits are the limits a server announces in WELCOME.
type Limits struct {
	MaxBody    uint32 // largest body frame
	MaxBatch   uint32 // most records per batch
	MaxPayload uint32 // largest job payload
}

// ProtocolLimits are DRV/2's own limits, the most a server may announce.
var ProtocolLimits = Limits{MaxBody: MaxBody, MaxBatch: MaxBatch, MaxPayload: MaxPayload}

// Command is CmdWelcome.
func (m *Welcome) Command() Command { return CmdWelcome }

// RequestID echoes the HELLO's.
func (m *Welcome) RequestID() uint64 { return m.Req }

func (m *Welcome) appendBody(w *writer) {
	w.u64(m.Session)
	w.ms("heartbeat", m.Heartbeat)
	w.u16(m.Liveness)
	w.u32(m.Slots)
	w.u32(m.Limits.MaxBody)
	w.u32(m.Limits.MaxBatch)
	w.u32(m.Limits.MaxPayload)
	w.str("server", m.Server)
	w.runs("cancel count", m.Cancel)
}

func (m *Welcome) decodeBody(r *reader) {
	m.Session = r.u64("session")
	if r.err == nil && m.Session == 0 {
		r.fail(CodeMalformed, "session", "0, want a session number of at least 1")
	}
	m.Heartbeat = r.ms("heartbeat")
	if r.err == nil && m.Heartbeat == 0 {
		r.fail(CodeMalformed, "heartbeat", "0 ms, want at least 1")
	}
	m.Liveness = r.u16("liveness")
	if r.err == nil && m.Liveness == 0 {
		r.fail(CodeMalformed, "liveness", "0, want at least 1")
	}
	m.Slots = r.u32("slots")
	if r.err == nil && m.Slots > MaxSlots {
		r.fail(CodeMalformed, "slots", "%d, want at most %d", m.Slots, MaxSlots)
	}
	m.Limits.MaxBody = r.limit("max body", MaxBody)
	m.Limits.MaxBatch = r.limit("max batch", MaxBatch)
	m.Limits.MaxPayload = r.limit("max payload", MaxPayload)
	m.Server = r.str("server", kLine, 0, MaxHost)
	m.Cancel, _ = r.runs("cancel count", "cancel", MaxSlots)
	r.end()
}

func (r *reader) limit(field string, max uint32) uint32 {
	v := r.u32(field)
	if r.err == nil && (v == 0 || v > max) {
		r.fail(CodeMalformed, field, "%d, want 1 to %d", v, max)
	}
	return v
}

// Heartbeat says the sender is alive (both directions). Any message counts
// as liveness; HEARTBEAT is what a side sends when it has nothing else to.
type Heartbeat struct {
	Req uint64 // 0
}

// Command is CmdHeartbeat.
func (m *Heartbeat) Command() Command { return CmdHeartbeat }

// RequestID is 0 by convention.
func (m *Heartbeat) RequestID() uint64 { return m.Req }

func (m *Heartbeat) appendBody(*writer) {}
func (m *Heartbeat) decodeBody(*reader) {}

// Disconnect ends the session (either side), with a code (200 for an
// ordinary goodbye, 408 liveness lost, 410 evicted, 503 shutting down, or
// any error code) and a human reason.
type Disconnect struct {
	Req    uint64
	Code   Code
	Reason string
}

// Command is CmdDisconnect.
func (m *Disconnect) Command() Command { return CmdDisconnect }

// RequestID is 0 by convention.
func (m *Disconnect) RequestID() uint64 { return m.Req }

func (m *Disconnect) appendBody(w *writer) { w.coded(m.Code, "reason", m.Reason) }

func (m *Disconnect) decodeBody(r *reader) {
	m.Code, m.Reason = r.coded(200, "reason")
	r.end()
}

func (e *Error) appendBody(w *writer) { w.coded(e.Code, "message", e.Msg) }

func (e *Error) decodeBody(r *reader) {
	e.Code, e.Msg = r.coded(400, "message")
	r.end()
}

// coded writes a code and its text (DISCONNECT, ERROR).
func (w *writer) coded(c Code, field, text string) {
	w.u16(uint16(c))
	w.str(field, text)
}

// coded reads a code of at least min (and at most 599) and its text.
func (r *reader) coded(min Code, field string) (Code, string) {
	c := Code(r.u16("code"))
	if r.err == nil && (c < min || c > 599) {
		r.fail(CodeMalformed, "code", "%d, want %d to 599", c, min)
	}
	return c, r.str(field, kText, 0, MaxText)
}

func validRole(v uint8) bool { return Role(v).Valid() }
