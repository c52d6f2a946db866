package crawl

// JobPayload travels with every crawl job: how deep the page is and which
// seed's scope applies to its links. Scope, when set, carries the crawl's
// definition from the coordinator (drover submit --scope, --max-depth):
// its scope (host, domain or prefix) and deepest level (0: no limit) then
// apply instead of the worker's own; the links' payloads carry them on.
// An empty payload is a seed: depth 0, its own URL as the seed, the
// worker's scope and depth.
type JobPayload struct {
	Depth    int    `json:"depth"`
	Seed     string `json:"seed"`
	Scope    string `json:"scope,omitempty"`
	MaxDepth int    `json:"max_depth,omitempty"`
	// Parent is the page whose links first named this one (the page
	// record's parent); the coordinator keeps the first submitter's.
	Parent string `json:"parent,omitempty"`
}
