package server

import (
	"bytes"

	"drover/admin"
	"drover/net/wire"
)

// The admin views read from the cluster (the Redis Cluster store: view
// results, events, jobs, waiters and retries) are answered off the
// reactor: the reactor does a query's own part (this coordinator's rows,
// the filter, the cursor), the cluster's read lane (clusterio.go) makes
// its round trips to Redis, and the reactor finishes the page and sends
// it when they are done, serving everything else meanwhile. A page read
// over a slow Redis (tens to hundreds of milliseconds) thus no longer
// stalls dispatch. Its PAGE may come after the replies to requests the
// console sent after it (clients match replies by request id).

// clusterRead is a query's part off the reactor: its reads of the
// cluster, handing back the reactor's part that finishes the page (an
// error's ERROR code is errorCode's).
type clusterRead func() (finish func() (admin.Page, error))

// clusterReaders is how many reads of the cluster the read lane makes at
// once; clusterReadQueue bounds the queries waiting for one (a query
// beyond it is answered 429, retry later).
const (
	clusterReaders   = 2
	clusterReadQueue = 32
)

// query answers q when one of its parts reads the cluster (at once when
// it need not read after all, else off the reactor) and reports whether
// it did; ident and req address the answer.
func (cl *cluster) query(ident []byte, req uint64, q admin.Query) bool {
	var prep func(admin.Query) (clusterRead, admin.Page, error)
	switch {
	case q.View == admin.ViewResults && cl.results != nil:
		prep = cl.readClusterResults // clusterresults.go
	case q.View == admin.ViewEvents && cl.ce != nil:
		prep = cl.readClusterEvents // clusterevents.go
	case (q.View == admin.ViewJobs || q.View == admin.ViewWaiters) && cl.cj != nil:
		prep = cl.readClusterJobs // clusterjobs.go
	case q.View == admin.ViewRetries && cl.cj != nil:
		prep = cl.readClusterRetries // clusterjobs.go
	default:
		return false
	}
	read, page, err := prep(q)
	if read == nil {
		cl.answerQuery(ident, req, page, err)
		return true
	}
	io := cl.reads
	if io == nil { // before Run, in tests
		page, err := read()()
		cl.answerQuery(ident, req, page, err)
		return true
	}
	if io.posted >= clusterReadQueue {
		cl.out.reject(onAdmin, ident, req, wire.CodeSlowDown, "query %s: %d queries wait on the cluster already; retry later", q.View, io.posted)
		return true
	}
	ident = bytes.Clone(ident)
	io.put(func() func() {
		finish := read()
		return func() {
			page, err := finish()
			cl.answerQuery(ident, req, page, err)
		}
	})
	return true
}

// answerQuery sends a query's PAGE, or its ERROR when err is set (its
// code from the one table, errcodes.go).
func (cl *cluster) answerQuery(ident []byte, req uint64, page admin.Page, err error) {
	if err != nil {
		cl.out.reject(onAdmin, ident, req, errorCode(err), "%v", err)
		return
	}
	cl.out.toConsole(ident, &wire.Page{Req: req, Page: page})
}

// done is a clusterRead's finish with a page computed off the reactor.
func done(page admin.Page, err error) func() (admin.Page, error) {
	return func() (admin.Page, error) { return page, err }
}
