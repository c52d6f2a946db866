package zsock

import (
	"time"

	"drover/admin"
)

func eventOf(kind string, job uint64) admin.Event {
	return admin.Event{Seq: job, At: time.Unix(1700000000, 0).UTC(), Kind: admin.EventKind(kind), JobID: job}
}
