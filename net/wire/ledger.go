package wire

import "drover/coord/id"

// Request asks the ledger for a batch of keys (client -> server). Each key
// gets a verdict in VERDICTS, in order: ok (the caller owns it now), no
// (queued or recently done), or wait (another session holds it: an ANSWER
// with this request id follows when that resolves).
type Request struct {
	Req  uint64
	Keys []id.Key
}

// Command is CmdRequest.
func (m *Request) Command() Command { return CmdRequest }

// RequestID is the id VERDICTS and any later ANSWER echo.
func (m *Request) RequestID() uint64 { return m.Req }

func (m *Request) appendBody(w *writer) { w.checked = w.keysChecked(m.Keys) }
func (m *Request) decodeBody(r *reader) { m.Keys = r.keys(); r.end() }

// Queue tells the ledger the caller queued work on keys it owns
// (client -> server); waiters on those keys are told no.
type Queue struct {
	Req  uint64
	Keys []id.Key
}

// Command is CmdQueue.
func (m *Queue) Command() Command { return CmdQueue }

// RequestID is the id VERDICTS echoes.
func (m *Queue) RequestID() uint64 { return m.Req }

func (m *Queue) appendBody(w *writer) { w.checked = w.keysChecked(m.Keys) }
func (m *Queue) decodeBody(r *reader) { m.Keys = r.keys(); r.end() }

// Done marks keys done whatever their state (client -> server).
type Done struct {
	Req   uint64
	Items []DoneItem
}

// DoneItem is one key of a DONE and how its work ended.
type DoneItem struct {
	Key     id.Key
	Outcome DoneOutcome
}

// Command is CmdDone.
func (m *Done) Command() Command { return CmdDone }

// RequestID is the id VERDICTS echoes.
func (m *Done) RequestID() uint64 { return m.Req }

func (m *Done) appendBody(w *writer) {
	w.count("count", len(m.Items))
	for i := range m.Items {
		w.key(m.Items[i].Key)
		w.u8(uint8(m.Items[i].Outcome))
	}
}

func (m *Done) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, minKey+1)
	for it := range items(r, &m.Items, n) {
		r.key(&it.Key)
		it.Outcome = DoneOutcome(r.enum("outcome", validDoneOutcome, doneOutcomeNames[:]))
	}
	r.end()
}

func validDoneOutcome(v uint8) bool { return DoneOutcome(v).Valid() }

// Verdicts answers REQUEST, QUEUE or DONE (server -> client): one item per
// key, in the order of the keys.
type Verdicts struct {
	Req   uint64
	Items []VerdictItem
}

// VerdictItem is the ledger's answer for one key. Reason is a short token
// saying why (queued, done, requested, not-owner, unknown, wrong-state,
// expired, handover, ...).
type VerdictItem struct {
	Fingerprint id.Fingerprint
	Verdict     Verdict
	Reason      string
}

// Command is CmdVerdicts.
func (m *Verdicts) Command() Command { return CmdVerdicts }

// RequestID echoes the request's.
func (m *Verdicts) RequestID() uint64 { return m.Req }

func (m *Verdicts) appendBody(w *writer) { w.checked = w.verdictsChecked(m.Items, true) }
func (m *Verdicts) decodeBody(r *reader) { m.Items = r.verdicts(true); r.end() }

// Answer delivers late verdicts for keys that got wait (server -> client).
// Its request id is the one of the REQUEST that asked; its verdicts are
// never wait.
type Answer struct {
	Req   uint64
	Items []VerdictItem
}

// Command is CmdAnswer.
func (m *Answer) Command() Command { return CmdAnswer }

// RequestID is the id of the REQUEST this answers.
func (m *Answer) RequestID() uint64 { return m.Req }

func (m *Answer) appendBody(w *writer) { w.checked = w.verdictsChecked(m.Items, false) }
func (m *Answer) decodeBody(r *reader) { m.Items = r.verdicts(false); r.end() }

func (r *reader) keys() []id.Key {
	n := r.count("count", 1, MaxBatch, minKey)
	var out []id.Key
	for k := range items(r, &out, n) {
		r.key(k)
	}
	return out
}

const minVerdict = 16 + 1 + 2

func (r *reader) verdicts(waitAllowed bool) []VerdictItem {
	n := r.count("count", 1, MaxBatch, minVerdict)
	var out []VerdictItem
	for it := range items(r, &out, n) {
		it.Fingerprint = r.fingerprint("fingerprint")
		it.Verdict = Verdict(r.enum("verdict", validVerdict, verdictNames[:]))
		if !waitAllowed && it.Verdict == VerdictWait && r.err == nil {
			r.fail(CodeMalformed, "verdict", "wait, want ok, no or error in an ANSWER")
		}
		it.Reason = r.str("reason", kLine, 0, MaxReason)
	}
	return out
}

func validVerdict(v uint8) bool { return Verdict(v).Valid() }
