// Package id holds the identities every part of drover agrees on: the work
// key (crawler, processor, url), its 128-bit fingerprint, and the session
// number the transport gives each connected peer.
//
// It is pure: no I/O, no clock, no dependency on the network stack (URL
// normalisation is implemented here on RFC 3986 rules rather than with
// net/url, so that coord/ depends on no net package at all).
package id

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Session identifies one connected peer (worker, producer or console) for
// the lifetime of its connection. It is the seed's "pid": the coordinator
// monitors it, and when it dies whatever it held is released. The transport
// allocates session numbers; zero is never a valid session.
type Session uint64

// Key is one unit of work: which crawler, with which processor, on which URL.
// Two keys with the same fields are the same work.
type Key struct {
	Crawler   string
	Processor string
	URL       string
}

// String renders the key for logs and the console.
func (k Key) String() string {
	return k.Crawler + "/" + k.Processor + " " + k.URL
}

// Fingerprint is the first 128 bits of SHA-256 over the canonical,
// length-prefixed encoding of a key (see Key.Fingerprint).
type Fingerprint [16]byte

// String renders the fingerprint as 32 lower-case hex digits.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// ParseFingerprint parses the 32-hex-digit form produced by String.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	if len(s) != 2*len(f) {
		return f, fmt.Errorf("fingerprint %q: want %d hex digits, got %d", s, 2*len(f), len(s))
	}
	if _, err := hex.Decode(f[:], []byte(s)); err != nil {
		return f, fmt.Errorf("fingerprint %q: %w", s, err)
	}
	return f, nil
}

// Fingerprint hashes the key as it is: callers normalise the URL first
// (NewKey does). The encoding is, for each of crawler, processor and url in
// that order, a 4-byte big-endian length followed by the bytes, so that no
// two distinct keys share an encoding.
func (k Key) Fingerprint() Fingerprint {
	var small [256]byte
	n := 12 + len(k.Crawler) + len(k.Processor) + len(k.URL)
	buf := small[:0]
	if n > len(small) {
		buf = make([]byte, 0, n)
	}
	for _, s := range [3]string{k.Crawler, k.Processor, k.URL} {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	sum := sha256.Sum256(buf)
	var f Fingerprint
	copy(f[:], sum[:len(f)])
	return f
}
