// Package admin is the data model of drover's admin protocol: the queries
// an operator's console or CLI makes (totals, windows of rows), the rows it
// gets back, and the actions it may take (evict, drain, requeue, pause).
//
// The coordinator core answers with these types, the transport encodes them
// as JSON on the admin socket (or passes them in-process to the embedded
// console), and the console renders them. The package is pure data.
package admin

import "time"

// View names a table the console can show.
type View string

// The tables.
const (
	ViewWorkers View = "workers" // registered workers
	ViewJobs    View = "jobs"    // per-URL state: broker jobs and requested keys
	ViewWaiters View = "waiters" // the FIFO of sessions waiting on one key
	ViewRetries View = "retries" // jobs in backoff or failed, and host back-offs
	ViewEvents  View = "events"  // the most recent events
	ViewResults View = "results" // finished jobs' results, by cursor (Query.From)
	ViewCrawls  View = "crawls"  // crawl definitions with their page counts
)

// Query asks for one window of one view: rows [Offset, Offset+Limit) after
// filtering and sorting, computed on the coordinator so the console never
// walks the whole state.
type Query struct {
	View   View   `json:"view"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	Sort   string `json:"sort,omitempty"` // one of Sorts[View]; empty: the view's default
	Desc   bool   `json:"desc,omitempty"`
	// Filter selects rows: free text matched against the row's text
	// columns (URL, worker id and host, ...) or field=value terms separated
	// by spaces: state=failed, host=example.com, worker=ID. Package
	// drover/filter owns the grammar and the matcher.
	Filter string `json:"filter,omitempty"`
	// Key selects the key whose waiters ViewWaiters lists (fingerprint hex).
	Key string `json:"key,omitempty"`
	// From is ViewResults' cursor: results after it (0: from the oldest
	// kept). ViewResults ignores Offset, Sort and Desc; its Filter takes
	// crawler=NAME and processor=NAME terms.
	From uint64 `json:"from,omitempty"`
	// After, on a Redis Cluster store, continues view jobs with the
	// cluster's rows after a page's After (Offset then counts from there;
	// this coordinator's own rows are not listed again).
	After string `json:"after,omitempty"`
}

// Page is the answer to a Query.
type Page struct {
	View    View        `json:"view"`
	Offset  int         `json:"offset"`
	Total   int         `json:"total"` // rows matching the filter, for the scroll bar
	Workers []WorkerRow `json:"workers,omitempty"`
	Jobs    []JobRow    `json:"jobs,omitempty"`
	Waiters []WaiterRow `json:"waiters,omitempty"`
	Hosts   []HostRow   `json:"hosts,omitempty"` // ViewRetries: host back-offs in force
	Events  []Event     `json:"events,omitempty"`
	// ViewResults: the results after Query.From, oldest first; Next is the
	// cursor to ask from next (past results the filter skipped); First is
	// the oldest cursor still kept (retention deleted those before it) and
	// Last the newest readable one (0: none yet).
	Results []Result `json:"results,omitempty"`
	Next    uint64   `json:"next,omitempty"`
	First   uint64   `json:"first,omitempty"`
	Last    uint64   `json:"last,omitempty"`
	Crawls  []Crawl  `json:"crawls,omitempty"` // ViewCrawls, by name
	// After, on a Redis Cluster store, is where view jobs goes on in the
	// cluster's rows past this page (Query.After); empty when nothing
	// follows, or while this coordinator's own rows go on past the page
	// (page on by Offset until a page carries it).
	After string `json:"after,omitempty"`
}

// Result is one finished job's result, as `drover results` prints it (one
// JSON line each). Output holds the job's output when it is valid UTF-8 of
// at most MaxTextOutput bytes, OutputBase64 (standard base64) otherwise;
// an empty output has neither.
type Result struct {
	Cursor       uint64    `json:"cursor"` // the result's sequence number: ask From it to get what follows
	JobID        uint64    `json:"job_id"`
	Crawler      string    `json:"crawler"`
	Processor    string    `json:"processor"`
	URL          string    `json:"url"`
	Outcome      string    `json:"outcome"` // ok, failed, budget (not run: past its crawl's page budget) or cancelled (not run: its crawl was cancelled)
	Error        string    `json:"error,omitempty"`
	Attempt      int       `json:"attempt"`
	Worker       string    `json:"worker,omitempty"`
	FinishedAt   time.Time `json:"finished_at"`
	Output       string    `json:"output,omitempty"`
	OutputBase64 []byte    `json:"output_base64,omitempty"`
}

// MaxTextOutput is the largest output a Result carries as text.
const MaxTextOutput = 1 << 20

// Totals are the header figures.
type Totals struct {
	At     time.Time `json:"at"`
	Paused bool      `json:"paused"`
	// Jobs by broker state.
	Queued     int `json:"queued"`
	Dispatched int `json:"dispatched"`
	Backoff    int `json:"backoff"`
	Done       int `json:"done"`
	Failed     int `json:"failed"`
	Unroutable int `json:"unroutable"` // queued jobs no live worker can take
	Polite     int `json:"polite"`     // queued jobs waiting for their host's politeness limits
	// Ledger keys by state (done includes keys done outside the broker).
	KeysRequested int `json:"keys_requested"`
	KeysQueued    int `json:"keys_queued"`
	KeysDone      int `json:"keys_done"`
	Waiters       int `json:"waiters"`
	// Workers by state.
	WorkersIdle     int `json:"workers_idle"`
	WorkersBusy     int `json:"workers_busy"`
	WorkersDraining int `json:"workers_draining"`
	WorkersLost     int `json:"workers_lost"`
	WorkersHeld     int `json:"workers_held"` // held back after dying before a first result (broker.holdback_start)
	// Counters since start.
	Dispatches   uint64 `json:"dispatches"`
	Completions  uint64 `json:"completions"`
	Failures     uint64 `json:"failures"`
	Throttles    uint64 `json:"throttles"`
	DedupHits    uint64 `json:"dedup_hits"`
	StaleResults uint64 `json:"stale_results"` // results for a run that is not current (RESULT-OK stale) or for no job (unknown)
	Malformed    uint64 `json:"malformed"`
	// Forbidden counts commands refused for their key's role, and
	// HandshakesRefused connections whose key is not admitted (with CURVE:
	// docs/PROTOCOL.md §15).
	Forbidden         uint64 `json:"forbidden"`
	HandshakesRefused uint64 `json:"handshakes_refused"`
	// Listening are the coordinator's endpoints as bound: a port asked
	// as 0 (or *) shows the one the OS chose.
	Listening Listeners `json:"listening,omitzero"`
	// Cluster, for a coordinator on a Redis Cluster store (serve --store
	// redis://...), is the view of every coordinator sharing it; absent
	// for a coordinator on its own.
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Cluster is the view of the coordinators sharing a Redis Cluster store,
// as they last published it (each once per heartbeat).
type Cluster struct {
	// Queued jobs wait in the shared queue; Claimed jobs were taken by a
	// coordinator for its workers and are not finished.
	Queued  int64 `json:"queued"`
	Claimed int64 `json:"claimed"`
	// Done and Failed count the jobs done and failed on every coordinator
	// since the store's counters were created, the dead ones' included; a
	// job run again after a failover or a sweep counts each time it
	// finishes (at least once, like delivery).
	Done   int `json:"done"`
	Failed int `json:"failed"`
	// Coordinators lists every coordinator that published, by id.
	Coordinators []ClusterCoordinator `json:"coordinators"`
	// PoliteHosts are the hosts whose fetches wait in the shared queue
	// for their politeness limits (at their cap, or inside their
	// interval), as the live coordinators' claims last found them: most
	// waiting jobs first, at most 100. Rows as the retries view's polite
	// ones; Jobs counts the host's fetches waiting in the shared queue
	// and InFlight those claimed by any coordinator.
	PoliteHosts []HostRow `json:"polite_hosts,omitempty"`
}

// ClusterCoordinator is one coordinator of a Cluster, as it last published
// itself.
type ClusterCoordinator struct {
	ID    string `json:"id"`              // its incarnation number in the cluster
	Peers string `json:"peers,omitempty"` // its peers endpoint
	// Alive is false once its heartbeat has expired (it stopped or died;
	// its claimed jobs go back to the queue when a live one sweeps it).
	Alive       bool      `json:"alive"`
	WorkersIdle int       `json:"workers_idle"`
	WorkersBusy int       `json:"workers_busy"`
	Queued      int       `json:"queued"`     // claimed jobs waiting there for a worker
	Dispatched  int       `json:"dispatched"` // jobs running on its workers
	Done        int       `json:"done"`
	Failed      int       `json:"failed"`
	Heartbeat   time.Time `json:"heartbeat"` // when it last published
}

// Listeners are a coordinator's bound endpoints (empty: not listening).
type Listeners struct {
	Peers  string `json:"peers,omitempty"`
	Admin  string `json:"admin,omitempty"`
	Events string `json:"events,omitempty"`
}

// Sorts names, per view, the orders the coordinator answers queries in
// (Query.Sort; Query.Desc reverses them); the first is the view's default,
// which any other name also gets.
var Sorts = map[View][]string{
	ViewWorkers: {"id", "host", "state", "used", "done", "failures", "since", "last_heartbeat"},
	ViewJobs:    {"age", "url", "state", "attempts", "failures", "retry_at", "throttles", "worker"},
	ViewRetries: {"retry_at", "url", "state", "attempts", "failures", "throttles", "worker", "age"},
	ViewWaiters: {"position", "session", "since"},
	ViewEvents:  {"seq"},
	ViewResults: {"cursor"},
	ViewCrawls:  {"name"},
}

// Settled reports whether work was finished and none is left: nothing
// queued, running, backing off, or requested by a live session. A crawl is
// over when its totals are settled.
func (t Totals) Settled() bool {
	return t.Queued+t.Dispatched+t.Backoff+t.KeysRequested == 0 && t.Done+t.Failed > 0
}

// WorkerRow is one registered worker.
type WorkerRow struct {
	ID            string            `json:"id"`   // stable worker id from HELLO
	Host          string            `json:"host"` // as the worker reported it
	Headers       map[string]string `json:"headers"`
	State         string            `json:"state"` // idle, busy, held, draining, lost
	Slots         int               `json:"slots"`
	Used          int               `json:"used"`
	Jobs          []uint64          `json:"jobs,omitempty"` // job ids held now
	Done          uint64            `json:"done"`
	Failures      uint64            `json:"failures"`
	LastHeartbeat time.Time         `json:"last_heartbeat"`
	Since         time.Time         `json:"since"` // registration time
	// HeldUntil: the worker id died holding jobs before reporting any
	// result more than once in a row, so it gets no job until then
	// (state held).
	HeldUntil time.Time `json:"held_until,omitzero"`
}

// JobRow is the state of one URL: a broker job, or a key requested in the
// ledger that has no job yet.
type JobRow struct {
	JobID     uint64    `json:"job_id,omitempty"` // 0 for a key with no job
	Key       string    `json:"key"`              // fingerprint hex
	Crawler   string    `json:"crawler"`
	Processor string    `json:"processor"`
	URL       string    `json:"url"`
	State     string    `json:"state"`           // requested, queued, dispatched, backoff, done, failed
	Owner     string    `json:"owner,omitempty"` // session holding a requested key
	Waiters   int       `json:"waiters"`
	Attempts  int       `json:"attempts"`
	Failures  int       `json:"failures"`
	Throttles int       `json:"throttles"`
	RetryAt   time.Time `json:"retry_at,omitzero"`
	Worker    string    `json:"worker,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	Reason    string    `json:"reason,omitempty"` // why it waits, in words: unroutable (and why), host back-off, paused
	// Wait is why it waits as one word of Waits (empty when it does not):
	// what Reason begins with, for a client to switch on.
	Wait Wait `json:"wait,omitempty"`
	// QueueID is, on a Redis Cluster store, the job's id in the cluster's
	// queue (as SUBMITTED gave it), for a job not on this coordinator
	// (JobID 0); Coordinator names the coordinator that claimed it
	// (state claimed), empty while it waits in the cluster's queue.
	QueueID     uint64    `json:"queue_id,omitempty"`
	Coordinator string    `json:"coordinator,omitempty"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	// History lists the attempts, newest last; filled for a detail query
	// (Query.Key set on ViewJobs) only.
	History []Attempt `json:"history,omitempty"`
}

// Attempt is one dispatch of a job and how it ended.
type Attempt struct {
	Worker  string    `json:"worker"`
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"` // ok, internal, external, throttled, lost, evicted, requeued, skipped, or empty while running
	Error   string    `json:"error,omitempty"`
}

// WaiterRow is one session waiting on a key, in FIFO order.
type WaiterRow struct {
	Position int       `json:"position"` // 1 is next in line
	Session  string    `json:"session"`
	Since    time.Time `json:"since"`
}

// HostRow is a host holding jobs back: a back-off in force after
// throttling, or (Polite) its politeness limits.
type HostRow struct {
	Host      string    `json:"host"`
	Until     time.Time `json:"until"` // back-off end; for a polite host its next eligible time (zero while it waits for a job in flight to end)
	Throttles int       `json:"throttles"`
	Jobs      int       `json:"jobs"` // jobs held back by it
	// Polite marks a host whose queued jobs wait for its politeness
	// limits; InFlight are its jobs dispatched now and Limit its limits
	// in force ("1 at once, 1 per 200ms").
	Polite   bool   `json:"polite,omitempty"`
	InFlight int    `json:"in_flight,omitempty"`
	Limit    string `json:"limit,omitempty"`
}

// Event is one state change on the monitor stream.
type Event struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Kind   EventKind `json:"kind"` // what happened: one of EventKinds, or a newer server's kind
	JobID  uint64    `json:"job_id,omitempty"`
	Key    string    `json:"key,omitempty"`
	URL    string    `json:"url,omitempty"`
	Worker string    `json:"worker,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// Cursor is, on job.done and job.failed, the job's result cursor when
	// the coordinator keeps results (QUERY view results from Cursor-1
	// reads it); Output carries the result's output too when it is valid
	// UTF-8 of at most MaxEventOutput bytes.
	Cursor uint64 `json:"cursor,omitempty"`
	Output string `json:"output,omitempty"`
	// Coordinator is, in view events on a Redis Cluster store, the id of
	// the coordinator the event happened on (empty elsewhere).
	Coordinator string `json:"coordinator,omitempty"`
}

// MaxEventOutput is the largest output an Event carries.
const MaxEventOutput = 1024

// ActionKind names an operator action.
type ActionKind string

// The actions. Every one is refused by a read-only console.
const (
	ActEvict         ActionKind = "evict"          // Workers: drop the worker, requeue its jobs uncharged
	ActDrain         ActionKind = "drain"          // Workers: no new jobs; leaves when its jobs finish
	ActUndrain       ActionKind = "undrain"        // Workers: take jobs again
	ActRequeue       ActionKind = "requeue"        // Jobs: back to the queue now, counters kept
	ActRequeueFailed ActionKind = "requeue-failed" // every failed job back to the queue
	ActPause         ActionKind = "pause"          // stop dispatching
	ActResume        ActionKind = "resume"         // dispatch again
	ActDefineCrawl   ActionKind = "define-crawl"   // Action.Crawl: define (or redefine) a crawl
	ActCancel        ActionKind = "cancel"         // Action.Crawler: fail the crawl's jobs that have not run
)

// ActionKinds returns every action kind, in the document's order.
func ActionKinds() []ActionKind {
	return []ActionKind{ActEvict, ActDrain, ActUndrain, ActRequeue, ActRequeueFailed, ActPause, ActResume, ActCancel, ActDefineCrawl}
}

// Action is an operator command. Targets are worker ids (evict, drain,
// undrain) or job ids in decimal (requeue); other actions take none.
type Action struct {
	Kind    ActionKind `json:"kind"`
	Targets []string   `json:"targets,omitempty"`
	Crawl   *Crawl     `json:"crawl,omitempty"` // define-crawl only
	// Crawler makes pause, resume and requeue-failed act on that crawl
	// only; cancel requires it.
	Crawler string `json:"crawler,omitempty"`
}

// Crawl is a crawl defined on the coordinator, named by the crawler part
// of its keys. Seeds of the crawler submitted without a payload get the
// crawl payload {"depth":0,"seed":URL,"scope":Scope,"max_depth":MaxDepth},
// so crawl workers follow its definition whatever their own; at most
// MaxPages of its jobs are ever dispatched.
type Crawl struct {
	Name     string `json:"name"`      // the crawler name, 1-255 bytes
	Scope    string `json:"scope"`     // host, domain or prefix
	MaxDepth int    `json:"max_depth"` // deepest level followed; 0: no limit
	MaxPages int    `json:"max_pages"` // page budget; 0: none
	// ResultsMaxAge (seconds) and ResultsMaxBytes keep the crawl's results
	// by limits of its own instead of the coordinator's (results.max_age,
	// results.max_bytes); 0 takes the coordinator's. Its own size limit
	// bounds its results alone, which then do not count towards the
	// coordinator's.
	ResultsMaxAge   int64     `json:"results_max_age,omitempty"`
	ResultsMaxBytes int64     `json:"results_max_bytes,omitempty"`
	Pages           int       `json:"pages"`            // server: jobs dispatched so far (the budget's count)
	State           string    `json:"state,omitempty"`  // server: running, paused, cancelled, done or idle (CurrentState)
	Defined         time.Time `json:"defined,omitzero"` // server: when it was last defined
	// Server: the crawl's jobs by state now (Queued includes jobs a pause
	// set aside), and Done, its jobs finished ok since it was first named
	// (kept in the store with the crawl: it survives restarts and the
	// broker forgetting old done jobs); Failed counts its jobs failed now
	// (budget and cancelled included; a requeue takes one back).
	Queued  int `json:"queued"`
	Running int `json:"running"`
	Backoff int `json:"backoff"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	// PagesPerSec is the crawl's jobs finished ok per second over the last
	// 10 seconds (fewer when its first finished more recently).
	PagesPerSec float64 `json:"pages_per_s"`
}

// ActionResult says what an action did, target by target.
type ActionResult struct {
	Affected int      `json:"affected"`
	Errors   []string `json:"errors,omitempty"` // one line per target refused, naming it and why
}
