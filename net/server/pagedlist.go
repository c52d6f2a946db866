package server

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/ledger"
	"drover/filter"
	"drover/store"
)

// Job lists beyond RAM (issue 21): with queued jobs paged out to the store
// (Options.ResidentJobs), a jobs view in age order goes on into the store
// where the jobs in memory end. The order holds because the pager keeps
// the jobs in memory older than those only in the store (paging.go): a
// window lists the jobs in memory matching it, then the paged-out queued
// jobs read from the store in id order, then the requested keys (as the
// coordinator lists them after the jobs). Only what the window shows is
// read: the store's queued jobs above the pager's read cursor, in order,
// up to the window's end.
//
// The store part is listed for the jobs view sorted by age, oldest first,
// with no filter or one of state and wait terms only, naming queued and
// paged (when they are there). Other sorts, newest
// first, and other filters list the jobs in memory (and count them alone),
// as the coordinator answers them.

// window reports whether q's window goes on into the paged-out jobs, and
// whether its rows include the requested keys (false without paging).
func (p *pager) window(q admin.Query) (ok, withKeys bool) {
	if p == nil || q.View != admin.ViewJobs || q.Key != "" || q.Desc || (q.Sort != "" && q.Sort != "age") {
		return false, false
	}
	if paged, _ := p.c.Paged(); paged == 0 {
		return false, false
	}
	f, err := filter.Parse(q.Filter)
	if err != nil || !f.Without(filter.FieldState, filter.FieldWait).Empty() {
		return false, false
	}
	states, waits := f.Values(filter.FieldState), f.Values(filter.FieldWait)
	if states != nil && !slices.Contains(states, "queued") || waits != nil && !slices.Contains(waits, string(admin.WaitPaged)) {
		return false, false
	}
	// Requested keys never wait (admin.JobRow.Wait).
	return true, waits == nil && (states == nil || slices.Contains(states, ledger.Requested.String()))
}

// withPaged continues page, the coordinator's answer to q at now, into
// the queued jobs only the store holds (see above).
func (p *pager) withPaged(now time.Time, q admin.Query, page admin.Page) (admin.Page, error) {
	ok, withKeys := p.window(q)
	if !ok {
		return page, nil
	}
	paged, _ := p.c.Paged()
	keys := 0
	if withKeys {
		keys = p.c.Totals(now).KeysRequested
	}
	mem := max(page.Total-keys, 0) // jobs in memory matching q
	off := page.Offset
	lim := q.Limit
	if lim <= 0 || lim > coord.MaxWindow {
		lim = coord.MaxWindow
	}
	end := off + lim
	out := page
	out.Total = page.Total + paged
	out.Jobs = nil
	if off < mem {
		n := min(end, mem) - off
		out.Jobs = append(out.Jobs, page.Jobs[:min(n, len(page.Jobs))]...)
	}
	// The store's part: rows [mem, mem+paged) of the window.
	if lo, hi := max(off, mem)-mem, min(end, mem+paged)-mem; lo < hi {
		skip, want := lo, hi-lo
		_, _, err := p.st.ReadQueuedJobs(p.cursor, math.MaxInt, func(r *store.JobRecord) error {
			rec := fromStoreJob(r)
			row, ok := p.c.PagedJobRow(&rec)
			switch {
			case !ok: // in memory: listed with the jobs in memory
			case skip > 0:
				skip--
			default:
				out.Jobs = append(out.Jobs, row)
				if want--; want == 0 {
					return errWindowFull
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errWindowFull) {
			return page, fmt.Errorf("list the jobs only the store holds: %w", err)
		}
	}
	// The requested keys after them.
	if withKeys && end > mem+paged {
		kq := q
		kq.Offset = mem + max(off-mem-paged, 0)
		kq.Limit = end - max(off, mem+paged)
		kp, err := p.c.Query(now, kq)
		if err != nil {
			return page, err
		}
		out.Jobs = append(out.Jobs, kp.Jobs...)
	}
	return out, nil
}

// errWindowFull stops a store read once a window has its rows.
var errWindowFull = errors.New("the window is full")
