package coord

import (
	"time"

	"drover/coord/broker"
)

// RestoreRobots gives a host the robots.txt copy that a coordinator before
// this one kept in its store (broker.RestoreRobots): the fleet does not
// fetch the file again, and its Crawl-delay still spaces the host, until
// the copy expires. An expired copy is not restored (false).
func (c *Coordinator) RestoreRobots(now time.Time, host string, r broker.Robots) (bool, error) {
	return c.brk.RestoreRobots(now, host, r)
}
