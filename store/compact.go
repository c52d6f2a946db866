package store

import (
	"context"
	"fmt"
)

// Compact flushes the memtables and compacts every record into the
// store's last level, waiting for it: the steady state of a store that has
// been up for a while, where a lookup consults one table's bloom filter per
// level. For benchmarks and maintenance; writes go on meanwhile.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store %s: flush before compacting: %w", s.where(), corrupt(err))
	}
	if err := s.db.Compact(ctx, []byte{pfxInternal}, []byte{pfxEnd}, true); err != nil {
		return fmt.Errorf("store %s: compact: %w", s.where(), corrupt(err))
	}
	return nil
}
