package store

import (
	"fmt"
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
	return s.scan([]byte{pfxCrawl}, []byte{pfxCrawl + 1}, "read crawls", func(k, v []byte) (bool, error) {
		return true, fn(string(k[1:]), v)
	})
}
