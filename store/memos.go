package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Submit memos (issue 14): what each SUBMIT request of a producer got
// accepted, so that a producer re-sending a request after a coordinator
// restart is answered as its first send was. One record per producer and
// request, its value opaque to the store (the coordinator's encoding):
//
//	0x07 producer 0x00 req[8, big-endian]   submit memos
const pfxMemo byte = 0x07

// maxMemoProducer is the longest producer name a memo record takes (a
// role, a slash and the protocol's longest id, with room to spare).
const maxMemoProducer = 1024

func memoKey(producer string, req uint64) []byte {
	k := make([]byte, 0, 1+len(producer)+1+8)
	k = append(append(append(k, pfxMemo), producer...), 0)
	return binary.BigEndian.AppendUint64(k, req)
}

func checkMemoName(producer string) error {
	if producer == "" || len(producer) > maxMemoProducer || bytes.IndexByte([]byte(producer), 0) >= 0 {
		return fmt.Errorf("store: submit memo of producer %q: want a name of 1 to %d bytes without NUL", producer, maxMemoProducer)
	}
	return nil
}

// PutMemo writes the memo of request req of producer, replacing any
// earlier one.
func (b *Batch) PutMemo(producer string, req uint64, value []byte) error {
	if err := b.check(checkMemoName(producer)); err != nil {
		return err
	}
	return b.set(memoKey(producer, req), value)
}

// DeleteMemo forgets the memo of request req of producer.
func (b *Batch) DeleteMemo(producer string, req uint64) error {
	if err := b.check(checkMemoName(producer)); err != nil {
		return err
	}
	return b.del(memoKey(producer, req))
}

// ReadMemos calls fn with every submit memo, by producer and request. An
// error from fn stops it and is returned; value is valid only during the
// call.
func (s *Store) ReadMemos(fn func(producer string, req uint64, value []byte) error) error {
	return s.scan([]byte{pfxMemo}, []byte{pfxMemo + 1}, "read submit memos", func(k, v []byte) (bool, error) {
		if len(k) < 1+1+1+8 || k[len(k)-9] != 0 {
			return false, fmt.Errorf("store %s: read submit memos: key %x: %w", s.where(), k, ErrCorrupt)
		}
		return true, fn(string(k[1:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:]), v)
	})
}
