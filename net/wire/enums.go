package wire

// Role is what a peer announces itself as in HELLO.
type Role uint8

// The roles.
const (
	RoleWorker   Role = 1 // runs jobs; peers socket
	RoleProducer Role = 2 // submits jobs and uses the ledger; peers socket
	RoleConsole  Role = 3 // operator console or CLI; admin socket
)

// Verdict is the ledger's answer for one key.
type Verdict uint8

// The verdicts.
const (
	VerdictOK    Verdict = 1 // the caller owns the key (REQUEST) or the operation happened
	VerdictNo    Verdict = 2 // someone else has it queued or done: do not do the work
	VerdictWait  Verdict = 3 // another session holds it; an ANSWER follows later
	VerdictError Verdict = 4 // refused (not owner, unknown, wrong state); Reason says why
)

// DoneOutcome is how the work on a key ended, as DONE reports it.
type DoneOutcome uint8

// The DONE outcomes.
const (
	DoneOK     DoneOutcome = 1
	DoneFailed DoneOutcome = 2
)

// SubmitStatus is the fate of one submitted job.
type SubmitStatus uint8

// The submit statuses.
const (
	SubmitAccepted  SubmitStatus = 1 // a new job; JobID names it
	SubmitDuplicate SubmitStatus = 2 // the key is queued or done already
	SubmitError     SubmitStatus = 3 // refused; Reason says why
	// SubmitWait: another session holds the key in requested (a ledger
	// REQUEST). The job is not queued yet: if that session queues or
	// finishes the key, a later SUBMITTED with the same request id says
	// duplicate; if it dies, the key passes to the submitter and the later
	// SUBMITTED says accepted with the new job id.
	SubmitWait SubmitStatus = 4
)

// Outcome is how a job ended, as a worker reports it in RESULT.
type Outcome uint8

// The job outcomes.
const (
	OutcomeOK        Outcome = 1 // done
	OutcomeInternal  Outcome = 2 // the worker's fault: retried elsewhere up to a limit
	OutcomeExternal  Outcome = 3 // the job's fault: failed at once
	OutcomeThrottled Outcome = 4 // the site said slow down: back off, not charged
)

// ResultStatus is what the server did with one result.
type ResultStatus uint8

// The result statuses.
const (
	ResultRecorded ResultStatus = 1 // recorded (and its links submitted)
	ResultStale    ResultStatus = 2 // the job is no longer assigned to this worker: ignored
	ResultUnknown  ResultStatus = 3 // no such job: ignored
)

var (
	roleNames          = [...]string{1: "worker", 2: "producer", 3: "console"}
	verdictNames       = [...]string{1: "ok", 2: "no", 3: "wait", 4: "error"}
	doneOutcomeNames   = [...]string{1: "ok", 2: "failed"}
	submitStatusNames  = [...]string{1: "accepted", 2: "duplicate", 3: "error", 4: "wait"}
	outcomeNames       = [...]string{1: "ok", 2: "internal", 3: "external", 4: "throttled"}
	resultStatusNames  = [...]string{1: "recorded", 2: "stale", 3: "unknown"}
	errUnknownEnumName = "unknown"
)

func enumName(names []string, v uint8) string {
	if v == 0 || int(v) >= len(names) {
		return errUnknownEnumName + "(" + itoa(uint64(v)) + ")"
	}
	return names[v]
}

func enumValid(names []string, v uint8) bool { return v > 0 && int(v) < len(names) }

// Valid reports whether r is a role of DRV/1.
func (r Role) Valid() bool { return enumValid(roleNames[:], uint8(r)) }

// String is the role's name: worker, producer or console.
func (r Role) String() string { return enumName(roleNames[:], uint8(r)) }

// Valid reports whether v is a verdict of DRV/1.
func (v Verdict) Valid() bool { return enumValid(verdictNames[:], uint8(v)) }

// String is the verdict's name: ok, no, wait or error.
func (v Verdict) String() string { return enumName(verdictNames[:], uint8(v)) }

// Valid reports whether o is a DONE outcome of DRV/1.
func (o DoneOutcome) Valid() bool { return enumValid(doneOutcomeNames[:], uint8(o)) }

// String is the outcome's name: ok or failed.
func (o DoneOutcome) String() string { return enumName(doneOutcomeNames[:], uint8(o)) }

// Valid reports whether s is a submit status of DRV/1.
func (s SubmitStatus) Valid() bool { return enumValid(submitStatusNames[:], uint8(s)) }

// String is the status's name: accepted, duplicate or error.
func (s SubmitStatus) String() string { return enumName(submitStatusNames[:], uint8(s)) }

// Valid reports whether o is a job outcome of DRV/1.
func (o Outcome) Valid() bool { return enumValid(outcomeNames[:], uint8(o)) }

// String is the outcome's name: ok, internal, external or throttled.
func (o Outcome) String() string { return enumName(outcomeNames[:], uint8(o)) }

// Valid reports whether s is a result status of DRV/1.
func (s ResultStatus) Valid() bool { return enumValid(resultStatusNames[:], uint8(s)) }

// String is the status's name: recorded, stale or unknown.
func (s ResultStatus) String() string { return enumName(resultStatusNames[:], uint8(s)) }

// Header is one capability (on a worker) or requirement (on a job), k=v.
type Header struct {
	Name  string
	Value string
}

// Headers is an ordered list of headers with unique names.
type Headers []Header

// HeadersOf returns the headers of map m (nil for none), in the map's
// order: the order of a header list means nothing in DRV/1, so it is not
// sorted (a JOB is built per dispatch). The inverse of Map.
func HeadersOf(m map[string]string) Headers {
	if len(m) == 0 {
		return nil
	}
	h := make(Headers, 0, len(m))
	for k, v := range m {
		h = append(h, Header{Name: k, Value: v})
	}
	return h
}

// Get returns the value of the named header.
func (h Headers) Get(name string) (string, bool) {
	for _, x := range h {
		if x.Name == name {
			return x.Value, true
		}
	}
	return "", false
}

// Map returns the headers as a map (nil for none).
func (h Headers) Map() map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for _, x := range h {
		m[x.Name] = x.Value
	}
	return m
}
