package store

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Crawl definitions (issue 23): one record per crawler name, its value
// opaque to the store (the coordinator's JSON of the definition and its
// page count):
//
//	0x06 name   crawl definitions
const pfxCrawl byte = 0x06

// maxCrawlName is the longest crawler name (the protocol's MaxName).
const maxCrawlName = 255

func crawlKey(name string) []byte { return append([]byte{pfxCrawl}, name...) }

// PutCrawl writes the definition of the crawl name, replacing any earlier
// one.
func (b *Batch) PutCrawl(name string, value []byte) error {
	var err error
	if name == "" || len(name) > maxCrawlName {
		err = fmt.Errorf("store: crawl record %q: want a name of 1 to %d bytes", name, maxCrawlName)
	}
	if err := b.check(err); err != nil {
		return err
	}
	return b.set(crawlKey(name), value)
}

// DeleteCrawl forgets the definition of the crawl name.
func (b *Batch) DeleteCrawl(name string) error {
	if err := b.check(nil); err != nil {
		return err
	}
	return b.del(crawlKey(name))
}

// ReadCrawls calls fn with every crawl definition, by name. An error from
// fn stops it and is returned.
func (s *Store) ReadCrawls(fn func(name string, value []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxCrawl}, UpperBound: []byte{pfxCrawl + 1}})
	if err != nil {
		return fmt.Errorf("store %s: read crawls: %w", s.where(), corrupt(err))
	}
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("store %s: read crawls: %w", s.where(), corrupt(verr))
			break
		}
		err = fn(string(it.Key()[1:]), v)
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store %s: read crawls: %w", s.where(), corrupt(cerr))
	}
	return err
}
