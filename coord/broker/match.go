package broker

import (
	"slices"
	"strconv"
	"strings"
)

// Match reports whether a worker advertising worker headers satisfies every
// header a job requires: equality, except "threads" (the job's value must be
// a number <= the worker's) and "hwgroup" (the job lists a|b|c, any one equal
// to the worker's value). A header the worker lacks does not match, nor does
// a "threads" value that is not a number.
func Match(job, worker map[string]string) bool {
	for k, v := range job {
		if !matchOne(k, v, worker) {
			return false
		}
	}
	return true
}

func matchOne(k, v string, worker map[string]string) bool {
	wv, ok := worker[k]
	if !ok {
		return false
	}
	switch k {
	case "threads":
		jn, err1 := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		wn, err2 := strconv.ParseInt(strings.TrimSpace(wv), 10, 64)
		return err1 == nil && err2 == nil && jn <= wn
	case "hwgroup":
		for g := range strings.SplitSeq(v, "|") {
			if g == wv {
				return true
			}
		}
		return false
	}
	return v == wv
}

// class is the set of jobs requiring one exact header set: they share a
// FIFO queue and a cached verdict of which workers can take them.
type class struct {
	no      uint32 // its index in Broker.classAll
	key     string
	headers map[string]string
	names   []string // header names, sorted
	queue   jobList  // every queued job of the class, FIFO
	ring    ring     // its lanes that can give a job now, in turn (polite.go)
	capable int      // live, not draining workers that match
	unrtAt  int64    // when capable dropped to 0 (Unix ns); 0 while routable
	reason  string
	rgen    uint64
}

// classFor returns the class of a header set, creating it (and matching it
// against every live worker) on first use.
func (b *Broker) classFor(h map[string]string) *class {
	if len(h) == 0 {
		return b.noHdr
	}
	keys := b.scratchKeys[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := b.scratchBuf[:0]
	for _, k := range keys {
		buf = append(buf, k...)
		buf = append(buf, '=')
		buf = append(buf, h[k]...)
		buf = append(buf, 0)
	}
	b.scratchKeys, b.scratchBuf = keys, buf
	if c, ok := b.classes[string(buf)]; ok {
		return c
	}
	cp := make(map[string]string, len(h))
	for k, v := range h {
		cp[k] = v
	}
	return b.newClass(string(buf), cp)
}

func (b *Broker) newClass(key string, h map[string]string) *class {
	c := &class{no: uint32(len(b.classAll)), key: key, headers: h}
	for k := range h {
		c.names = append(c.names, k)
	}
	slices.Sort(c.names)
	b.classes[key] = c
	b.classAll = append(b.classAll, c)
	for _, w := range b.sessions {
		if Match(h, w.headers) {
			w.classes = append(w.classes, c)
			if w.takesJobs() {
				c.capable++
			}
		}
	}
	return c
}

// String renders the header set as k=v pairs separated by spaces.
func (c *class) String() string {
	var sb strings.Builder
	for i, k := range c.names {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(c.headers[k])
	}
	return sb.String()
}

func (c *class) push(b *Broker, j *job) {
	c.queue.push(j)
	if c.capable == 0 {
		b.unrt++
	}
}

func (c *class) remove(b *Broker, j *job) {
	c.queue.remove(&b.jobs, j)
	if c.capable == 0 {
		b.unrt--
	}
}

// gainWorker and loseWorker keep the capable count and the unroutable
// total as workers start or stop taking jobs.
func (c *class) gainWorker(b *Broker) {
	c.capable++
	if c.capable == 1 {
		b.unrt -= c.queue.n
		c.unrtAt = 0
	}
}

func (c *class) loseWorker(b *Broker, t int64) {
	c.capable--
	if c.capable == 0 {
		b.unrt += c.queue.n
		c.unrtAt = t
	}
}

// unroutableReason says why no worker can take the class's jobs, naming the
// first header no live worker satisfies.
func (b *Broker) unroutableReason(c *class) string {
	if c.reason != "" && c.rgen == b.gen {
		return c.reason
	}
	r := WaitUnroutable.text("no live worker")
	if len(c.names) > 0 {
		r = WaitUnroutable.text("no live worker matches all of " + c.String())
		for _, k := range c.names {
			found := false
			for _, w := range b.sessions {
				if w.takesJobs() && matchOne(k, c.headers[k], w.headers) {
					found = true
					break
				}
			}
			if !found {
				r = WaitUnroutable.text("no live worker with " + k + "=" + c.headers[k])
				break
			}
		}
	}
	c.reason, c.rgen = r, b.gen
	return r
}
