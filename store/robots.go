package store

import (
	"encoding/binary"
	"fmt"
	"time"
)

// robots.txt copies (issue 22, PROTOCOL.md §6.18): the copy of a host's
// robots.txt the coordinator keeps for the fleet, with the Crawl-delay it
// gave, so that a restarted coordinator neither has the fleet fetch the
// file again nor forgets the host's interval until the copy expires. One
// record per host key:
//
//	0x08 host   robots.txt copies
const pfxRobots byte = 0x08

// maxRobotsHost is the longest host key a robots record takes (a URL's
// host and port, with room to spare).
const maxRobotsHost = 1024

// RobotsRecord is one host's robots.txt copy.
type RobotsRecord struct {
	// Origin is scheme://host[:port] of the URLs the copy applies to.
	Origin string
	// CrawlDelay is the Crawl-delay the reporting worker read in it.
	CrawlDelay time.Duration
	// Expires is when the copy may no longer be used.
	Expires time.Time
	// Body is the file as fetched.
	Body []byte
}

// robotsVersion is the first byte of every robots value (its own, as
// results have theirs: a change of the key and job values' layout does not
// make the stored copies unreadable).
const robotsVersion = 1

func robotsKey(host string) []byte { return append([]byte{pfxRobots}, host...) }

// encodeRobots appends the value of a robots record.
func encodeRobots(b []byte, r *RobotsRecord) []byte {
	b = append(b, robotsVersion)
	b = binary.AppendVarint(b, stamp(r.Expires))
	b = binary.AppendVarint(b, int64(r.CrawlDelay))
	b = appendString(b, r.Origin)
	return appendBytes(b, r.Body)
}

// decodeRobots decodes a robots value into r; r.Body is a copy.
func decodeRobots(v []byte, r *RobotsRecord) error {
	d := decoder{b: v}
	if ver := d.byte(); d.err == nil && ver != robotsVersion {
		d.fail(fmt.Errorf("robots version %d: want %d", ver, robotsVersion))
	}
	r.Expires = d.time()
	r.CrawlDelay = time.Duration(d.varint())
	r.Origin = d.string()
	r.Body = append([]byte(nil), d.bytes()...)
	if d.err == nil && r.CrawlDelay < 0 {
		d.fail(fmt.Errorf("crawl delay %v: want >= 0", r.CrawlDelay))
	}
	return d.end()
}

func checkRobotsHost(host string) error {
	if host == "" || len(host) > maxRobotsHost {
		return fmt.Errorf("store: robots record of host %q: want a host key of 1 to %d bytes", host, maxRobotsHost)
	}
	return nil
}

// PutRobots writes host's robots.txt copy, replacing any earlier one.
func (b *Batch) PutRobots(host string, r *RobotsRecord) error {
	err := checkRobotsHost(host)
	if err == nil && r.Expires.IsZero() {
		err = fmt.Errorf("store: robots record of host %q: no expiry, want the copy's", host)
	}
	if err := b.check(err); err != nil {
		return err
	}
	return b.set(robotsKey(host), encodeRobots(nil, r))
}

// DeleteRobots forgets host's robots.txt copy.
func (b *Batch) DeleteRobots(host string) error {
	if err := b.check(checkRobotsHost(host)); err != nil {
		return err
	}
	return b.del(robotsKey(host))
}

// ReadRobots calls fn with every robots.txt copy, by host key. An error
// from fn stops it and is returned.
func (s *Store) ReadRobots(fn func(host string, r *RobotsRecord) error) error {
	return s.scan([]byte{pfxRobots}, []byte{pfxRobots + 1}, "read robots.txt copies", func(k, v []byte) (bool, error) {
		var r RobotsRecord
		if err := decodeRobots(v, &r); err != nil {
			return false, fmt.Errorf("store %s: %w: robots record of host %q: %w", s.where(), ErrCorrupt, k[1:], err)
		}
		return true, fn(string(k[1:]), &r)
	})
}
