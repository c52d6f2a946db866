package store

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRobotsRoundTrip writes, replaces and deletes robots.txt copies and
// reads back what is left, by host key; a record without a host or an
// expiry is refused and fails its batch, and a value that does not decode
// is reported corrupt.
func TestRobotsRoundTrip(t *testing.T) {
	s := memT(t)
	exp := time.Date(2026, 12, 2, 5, 0, 0, 123, time.UTC)
	rec := func(origin, body string, d time.Duration) *RobotsRecord {
		return &RobotsRecord{Origin: origin, Body: []byte(body), CrawlDelay: d, Expires: exp}
	}
	commitT(t, s, func(b *Batch) error {
		for _, h := range []string{"b.test", "a.test:8080", "a.test"} {
			if err := b.PutRobots(h, rec("http://"+h, "User-agent: *\nDisallow: /"+h+"\n", time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	commitT(t, s, func(b *Batch) error {
		if err := b.PutRobots("b.test", rec("https://b.test", "", 0)); err != nil {
			return err
		}
		return b.DeleteRobots("a.test:8080")
	})
	var got []string
	if err := s.ReadRobots(func(h string, r *RobotsRecord) error {
		if !r.Expires.Equal(exp) {
			t.Errorf("host %s: expires %v, want %v", h, r.Expires, exp)
		}
		got = append(got, h+"|"+r.Origin+"|"+string(r.Body)+"|"+r.CrawlDelay.String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a.test|http://a.test|User-agent: *\nDisallow: /a.test\n|1s", "b.test|https://b.test||0s"}
	if !slices.Equal(got, want) {
		t.Fatalf("copies %q, want %q", got, want)
	}

	for _, bad := range []struct {
		host string
		r    *RobotsRecord
	}{{"", rec("http://x", "", 0)}, {"x.test", &RobotsRecord{Origin: "http://x.test"}}} {
		b := s.NewBatch()
		if err := b.PutRobots(bad.host, bad.r); err == nil {
			t.Fatalf("PutRobots(%q, %+v) taken, want refused", bad.host, bad.r)
		}
		if err := s.Commit(b); err == nil {
			t.Fatal("a batch with a refused robots record committed")
		}
	}

	commitT(t, s, func(b *Batch) error { return b.set(robotsKey("c.test"), []byte{valueVersion, 0x80}) })
	if err := s.ReadRobots(func(string, *RobotsRecord) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a robots value that does not decode: %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeRobots: any value decodes or is refused without a panic, and
// what decodes encodes to a value that decodes to the same record.
func FuzzDecodeRobots(f *testing.F) {
	f.Add(encodeRobots(nil, &RobotsRecord{Origin: "https://a.test", Body: []byte("User-agent: *\nCrawl-delay: 2\n"), CrawlDelay: 2 * time.Second, Expires: time.Unix(1_800_000_000, 5)}))
	f.Add([]byte{valueVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		var r RobotsRecord
		if err := decodeRobots(v, &r); err != nil {
			return
		}
		back := encodeRobots(nil, &r)
		var r2 RobotsRecord
		if err := decodeRobots(back, &r2); err != nil || r2.Origin != r.Origin || r2.CrawlDelay != r.CrawlDelay || !r2.Expires.Equal(r.Expires) || !bytes.Equal(r2.Body, r.Body) {
			t.Fatalf("value %x decodes to %+v, which encodes to %x, which decodes to %+v (%v)", v, r, back, r2, err)
		}
	})
}
