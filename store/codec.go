package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"drover/coord/id"
)

// Key layout. Every key starts with a one-byte prefix naming its space:
//
//	0x00 name                      internal values (format version, epoch)
//	0x01 name                      meta records (MetaRecord)
//	0x02 fp[16]                    key records (KeyRecord)
//	0x03 id[8, big-endian]         job records (JobRecord)
//	0x04 class[1] at[8] ident      expiry index, ordered by time: an empty
//	                               value per done or failed record (ident is
//	                               the fp of a key or the id of a job), or
//	                               a grouped entry (ident: 0x01 epoch[8]
//	                               n[8], unique) whose value is the idents
//	                               of the records of its class and time
//	0x05 cursor[8, big-endian]     result records (results.go)
//	0x06 name                      crawl definitions (crawls.go)
//	0x07 producer 0 req[8]         submit memos (memos.go)
//	0x08 host                      robots.txt copies (robots.go)
//
// Recover walks 0x01..0x03 in key order, so meta comes first, then keys by
// fingerprint, then jobs by id. The expiry index may hold stale entries (a
// record re-done later, requeued or deleted): Sweep checks each entry
// against its record and drops the stale ones.
const (
	pfxInternal byte = 0x00
	pfxMeta     byte = 0x01
	pfxKey      byte = 0x02
	pfxJob      byte = 0x03
	pfxExpiry   byte = 0x04
	pfxEnd      byte = 0x09 // past the results (0x05), crawls (0x06), submit memos (0x07) and robots.txt copies (0x08)
)

// Expiry classes, one per TTL.
const (
	classKeyDone   byte = 1
	classKeyFailed byte = 2
	classJobDone   byte = 3
	classJobFailed byte = 4
	nClasses            = 5
)

// Internal value names.
const (
	internalFormat = "format"
	internalEpoch  = "epoch"
)

// formatVersion is the layout above; a store with another version is
// refused rather than misread. Version 2 added grouped expiry entries and
// job values of jobVersion; a store of version 1 (plain expiry entries,
// valueVersion job values, both still read) is upgraded to 2 when opened,
// so that an older drover, which would misread the new layouts, refuses
// it instead.
const formatVersion = 2

// oldestFormat is the oldest format version Open reads (and upgrades).
const oldestFormat = 1

// valueVersion is the first byte of every key value and of job values
// written before jobVersion.
const valueVersion = 1

// jobVersion is the first byte of the job values written now (encodeJob):
// Created and the attempts' times relative to Updated, and the host left
// out when it is the URL's. decodeJob reads both versions.
const jobVersion = 2

func internalKey(name string) []byte { return append([]byte{pfxInternal}, name...) }

func metaKey(name string) []byte { return append([]byte{pfxMeta}, name...) }

func keyKey(fp id.Fingerprint) []byte {
	var k [17]byte
	k[0] = pfxKey
	copy(k[1:], fp[:])
	return k[:]
}

func jobKey(j uint64) []byte {
	var k [9]byte
	k[0] = pfxJob
	binary.BigEndian.PutUint64(k[1:], j)
	return k[:]
}

// stamp encodes a time for values: the zero time is 0, any other time its
// Unix nanoseconds (so the instant 1970-01-01T00:00:00Z reads back as the
// zero time). Times beyond what int64 nanoseconds hold are clamped.
func stamp(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	switch {
	case t.Year() < 1678:
		return math.MinInt64
	case t.Year() > 2261:
		return math.MaxInt64
	}
	return t.UnixNano()
}

// unstamp is the inverse of stamp, in UTC.
func unstamp(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// expiryKey is the index entry of a done or failed record stamped at.
func expiryKey(class byte, at int64, ident []byte) []byte {
	k := make([]byte, 0, 10+len(ident))
	k = append(k, pfxExpiry, class)
	k = binary.BigEndian.AppendUint64(k, uint64(at)^(1<<63)) // order-preserving for negatives
	return append(k, ident...)
}

// identLen is the length of a record's ident in the expiry index of
// class: a fingerprint for key classes, a job id for job classes.
func identLen(class byte) int {
	if class == classJobDone || class == classJobFailed {
		return 8
	}
	return len(id.Fingerprint{})
}

// groupIdentLen is the length of a grouped expiry entry's ident, unlike
// either record ident's.
const groupIdentLen = 17

// groupIdent is a new grouped expiry entry's ident: unique in the store
// (the store's epoch, advanced by every Open, and a count since Open).
func (s *Store) groupIdent() []byte {
	k := make([]byte, 0, groupIdentLen)
	k = append(k, 1)
	k = binary.BigEndian.AppendUint64(k, s.epoch)
	return binary.BigEndian.AppendUint64(k, s.groups.Add(1))
}

// expiryBound is the first index key of class at or after at.
func expiryBound(class byte, at int64) []byte { return expiryKey(class, at, nil) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeKey appends the value of a key record.
func encodeKey(b []byte, r *KeyRecord) []byte {
	b = append(b, valueVersion, byte(r.State))
	b = binary.AppendVarint(b, stamp(r.At))
	b = appendString(b, r.Key.Crawler)
	b = appendString(b, r.Key.Processor)
	return appendString(b, r.Key.URL)
}

// encodeJob appends the value of a job record (jobVersion). State and
// Updated come first so that Sweep reads them without decoding the rest;
// Created and the attempts' times are written as differences from Updated
// (a few bytes each instead of nine), and the host as one byte when it is
// the URL's (id.Host).
func encodeJob(b []byte, r *JobRecord) []byte {
	upd := stamp(r.Updated)
	b = append(b, jobVersion, byte(r.State))
	b = binary.AppendVarint(b, upd)
	b = binary.AppendVarint(b, since(stamp(r.Created), upd))
	b = binary.AppendVarint(b, stamp(r.RetryAt))
	b = binary.AppendVarint(b, int64(r.Attempts))
	b = binary.AppendVarint(b, int64(r.Failures))
	b = binary.AppendVarint(b, int64(r.Throttles))
	b = append(b, r.FP[:]...)
	b = appendString(b, r.Key.Crawler)
	b = appendString(b, r.Key.Processor)
	b = appendString(b, r.Key.URL)
	if r.Host == id.Host(r.Key.URL) {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendString(b, r.Host)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Headers)))
	if len(r.Headers) > 0 {
		names := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			names = append(names, k)
		}
		slices.Sort(names) // one spelling per record
		for _, k := range names {
			b = appendString(b, k)
			b = appendString(b, r.Headers[k])
		}
	}
	b = appendBytes(b, r.Payload)
	b = appendString(b, r.Worker)
	b = appendString(b, r.LastError)
	b = binary.AppendUvarint(b, uint64(len(r.History)))
	for i := range r.History {
		a := &r.History[i]
		b = appendString(b, a.Worker)
		b = binary.AppendVarint(b, since(stamp(a.At), upd))
		b = appendString(b, a.Outcome)
		b = appendString(b, a.Error)
	}
	return b
}

// since is the stamp t relative to base, wrapping (so that every pair of
// stamps round-trips through after, however far apart).
func since(t, base int64) int64 { return int64(uint64(t) - uint64(base)) }

// after is the inverse of since.
func after(d, base int64) int64 { return int64(uint64(base) + uint64(d)) }

var (
	errShort = errors.New("value ends early")
	errLong  = errors.New("trailing bytes after the value")
)

// decoder reads a value; the first error sticks and every later read
// returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err, d.b = err, nil // no bytes left: the varint reads return 0
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	d.skip(n, "bad unsigned varint")
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	d.skip(n, "bad varint")
	return v
}

// skip moves past a varint of n bytes. n <= 0 is one that was cut short or
// overflowed (or the decoder had failed and holds no bytes): its value read
// as 0, and skip fails the decoder, naming it bad.
func (d *decoder) skip(n int, bad string) {
	if n <= 0 {
		if d.err == nil {
			d.fail(errors.New(bad))
		}
		return
	}
	d.b = d.b[n:]
}

// count reads a number of entries each taking at least minSize bytes, and
// refuses one the rest of the value cannot hold (so garbage cannot make us
// allocate).
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/minSize) {
		d.fail(fmt.Errorf("count %d: more entries than the %d bytes left can hold", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("counter %d: out of the int32 range", v))
		return 0
	}
	return int(v)
}

func (d *decoder) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail(errShort)
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("length %d: only %d bytes left", n, len(d.b)))
		return nil
	}
	return d.raw(int(n))
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) time() time.Time { return unstamp(d.varint()) }

// head reads the version and state bytes common to key and job values and
// checks both: the version must be valueVersion or, for job values
// (jobs), jobVersion.
func (d *decoder) head(nStates byte, jobs bool) (version, state byte) {
	if v := d.byte(); d.err == nil && v != valueVersion && (!jobs || v != jobVersion) {
		want := fmt.Sprint(valueVersion)
		if jobs {
			want = fmt.Sprintf("%d or %d", valueVersion, jobVersion)
		}
		d.fail(fmt.Errorf("value version %d: want %s", v, want))
	} else {
		version = v
	}
	s := d.byte()
	if d.err == nil && (s == 0 || s >= nStates) {
		d.fail(fmt.Errorf("state %d: want 1..%d", s, nStates-1))
	}
	return version, s
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(errLong)
	}
	return d.err
}

// keyHead decodes the state and time of a key value, without its key.
func keyHead(v []byte) (KeyState, int64, error) {
	d := decoder{b: v}
	_, s := d.head(byte(nKeyStates), false)
	at := d.varint()
	return KeyState(s), at, d.err
}

// jobHead decodes the state and update time of a job value.
func jobHead(v []byte) (JobState, int64, error) {
	d := decoder{b: v}
	_, s := d.head(byte(nJobStates), true)
	at := d.varint()
	return JobState(s), at, d.err
}

// jobPlain decodes the state of a job value and whether it is plain:
// queued with no retry time.
func jobPlain(v []byte) (JobState, bool, error) {
	d := decoder{b: v}
	_, s := d.head(byte(nJobStates), true)
	d.varint() // updated
	d.varint() // created
	retry := d.varint()
	return JobState(s), JobState(s) == JobQueued && retry == 0, d.err
}

// decodeKey decodes a key value into r (r.FP is set by the caller).
func decodeKey(v []byte, r *KeyRecord) error {
	d := decoder{b: v}
	_, st := d.head(byte(nKeyStates), false)
	r.State = KeyState(st)
	r.At = d.time()
	r.Key.Crawler = d.string()
	r.Key.Processor = d.string()
	r.Key.URL = d.string()
	return d.end()
}

// decodeJob decodes a job value of either version into r (r.ID is set by
// the caller). Nothing in r aliases v.
func decodeJob(v []byte, r *JobRecord) error {
	d := decoder{b: v}
	version, st := d.head(byte(nJobStates), true)
	r.State = JobState(st)
	upd := d.varint()
	r.Updated = unstamp(upd)
	rel := func(n int64) int64 { return n } // version 1: absolute times
	if version == jobVersion {
		rel = func(n int64) int64 { return after(n, upd) }
	}
	r.Created = unstamp(rel(d.varint()))
	r.RetryAt = d.time()
	r.Attempts = d.int()
	r.Failures = d.int()
	r.Throttles = d.int()
	copy(r.FP[:], d.raw(len(r.FP)))
	r.Key.Crawler = d.string()
	r.Key.Processor = d.string()
	r.Key.URL = d.string()
	if version == jobVersion {
		switch d.byte() {
		case 0:
			r.Host = id.Host(r.Key.URL)
		case 1:
			r.Host = d.string()
		default:
			d.fail(errors.New("host flag: want 0 (the URL's) or 1 (given)"))
		}
	} else {
		r.Host = d.string()
	}
	r.Headers = nil
	if n := d.count(2); n > 0 {
		r.Headers = make(map[string]string, n)
		for range n {
			k := d.string()
			r.Headers[k] = d.string()
		}
	}
	r.Payload = nil
	if p := d.bytes(); len(p) > 0 {
		r.Payload = slices.Clone(p)
	}
	r.Worker = d.string()
	r.LastError = d.string()
	r.History = nil
	if n := d.count(4); n > 0 {
		r.History = make([]Attempt, n)
		for i := range r.History {
			a := &r.History[i]
			a.Worker = d.string()
			a.At = unstamp(rel(d.varint()))
			a.Outcome = d.string()
			a.Error = d.string()
		}
	}
	return d.end()
}

// decodeUint64 decodes an 8-byte big-endian meta or internal value.
func decodeUint64(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("value of %d bytes: want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
