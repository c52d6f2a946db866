package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// DefaultWARCMaxSize is the size past which a WARC file is closed and the
// next one begun when WARCOptions.MaxSize is 0: the WARC 1.1 standard's
// suggestion of 1 GB.
const DefaultWARCMaxSize = 1 << 30

// WARCOptions says where and how a WARCWriter writes.
type WARCOptions struct {
	// Path names the files: "DIR/NAME.warc.gz" makes DIR/NAME-00001.warc.gz,
	// DIR/NAME-00002.warc.gz, ... numbered on from the highest number
	// already in DIR, so that a resumed crawl or a restarted worker adds
	// files and never rewrites one. A file being written is named with a
	// further ".open" and renamed when closed; one a stopped process left
	// open is cut after its last whole record and closed by OpenWARC.
	Path string
	// MaxSize is the size on disk at which a file is closed and the next
	// begun (0: DefaultWARCMaxSize): once a fetch's records bring it to
	// MaxSize or more. A fetch's request and response records are never
	// split between files, nor is a record.
	MaxSize int64
	// Software names the writer in each file's warcinfo record
	// ("drover/1.2.0").
	Software string
	// Info adds fields to each file's warcinfo record (e.g.
	// "http-header-user-agent", "robots", "isPartOf"), written in name order.
	Info map[string]string
}

// WARCWriter writes a crawl's fetches to WARC 1.1 files (ISO 28500:2017)
// with github.com/nlnwa/gowarc: a warcinfo record opens each file; each
// fetch adds a request record and a response record (see Fetcher and
// WithWARC), each a gzip member of its own, with sha1 WARC-Block-Digest
// and WARC-Payload-Digest in base32, and WARC-Concurrent-To linking the
// pair. It is safe for concurrent use: records are written one fetch at a
// time, a fetch's two records together.
type WARCWriter struct {
	w       *gowarc.WarcFileWriter
	recOpt  []gowarc.WarcRecordOption
	first   string // the first file's name
	dir     string
	maxSize int64
	rotate  sync.Mutex // one size check and rotation at a time
	// Repaired names the files a stopped writer had left open, which
	// OpenWARC cut after their last whole record and closed.
	Repaired []string
}

// warcName matches the files a WARCWriter makes for a name, with its
// serial number in the first group.
func warcName(name string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `-(\d+)\.warc\.gz(\.open)?$`)
}

// OpenWARC checks o, creates the directory if needed and returns a writer
// that opens its first file with the first record.
func OpenWARC(o WARCOptions) (*WARCWriter, error) {
	base := filepath.Base(o.Path)
	name, ok := strings.CutSuffix(base, ".warc.gz")
	if !ok || name == "" || o.Path == "" || strings.HasSuffix(o.Path, string(filepath.Separator)) {
		return nil, fmt.Errorf("WARC path %q: want a file name ending in .warc.gz, e.g. crawl.warc.gz", o.Path)
	}
	if o.MaxSize < 0 {
		return nil, fmt.Errorf("WARC max size %d: want 0 (the default, 1 GiB) or more bytes", o.MaxSize)
	}
	dir := filepath.Dir(o.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("WARC directory: %w", err)
	}
	repaired, err := repairOpenWARCs(dir, name)
	if err != nil {
		return nil, err
	}
	serial, err := lastWARCSerial(dir, name)
	if err != nil {
		return nil, err
	}
	maxSize := o.MaxSize
	if maxSize == 0 {
		maxSize = DefaultWARCMaxSize
	}
	recOpt := []gowarc.WarcRecordOption{
		gowarc.WithVersion(gowarc.V1_1),
		gowarc.WithAddMissingDigest(true),
		gowarc.WithDefaultDigestAlgorithm("sha1"),
		gowarc.WithDefaultDigestEncoding(gowarc.Base32),
		gowarc.WithBufferTmpDir(dir), // big bodies spill next to the archive, not into a RAM /tmp
		gowarc.WithSpecViolationPolicy(gowarc.ErrWarn),
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrWarn),
	}
	info := warcInfoBody(o)
	w := &WARCWriter{recOpt: recOpt, first: fmt.Sprintf("%s-%05d.warc.gz", name, serial+1), dir: dir, maxSize: maxSize,
		Repaired: repaired}
	w.w = gowarc.NewWarcFileWriter(
		gowarc.WithFileNameGenerator(&gowarc.PatternNameGenerator{
			Directory: dir, Prefix: name, Serial: int32(serial), Pattern: "%{prefix}s-%05{serial}d.%{ext}s",
		}),
		gowarc.WithCompression(true),
		gowarc.WithMaxFileSize(0), // rotated here, after a fetch's pair (the library would split it)
		gowarc.WithAddWarcConcurrentToHeader(true),
		gowarc.WithRecordOptions(recOpt...),
		gowarc.WithWarcInfoFunc(func(rb gowarc.WarcRecordBuilder) error {
			_, err := rb.WriteString(info)
			return err
		}),
	)
	return w, nil
}

// FirstFile is the name (without directory) of the first file the writer
// makes.
func (w *WARCWriter) FirstFile() string { return w.first }

// lastWARCSerial is the highest serial number of name's files in dir (0
// when there are none).
func lastWARCSerial(dir, name string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("WARC directory: %w", err)
	}
	re := warcName(name)
	last := 0
	for _, e := range entries {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > last {
				last = n
			}
		}
	}
	if last >= 99999 {
		return 0, fmt.Errorf("WARC files %s-NNNNN.warc.gz in %s: numbers up to 99999 are used; choose another name", name, dir)
	}
	return last, nil
}

// warcInfoBody is the warcinfo record's block: application/warc-fields.
func warcInfoBody(o WARCOptions) string {
	var b strings.Builder
	field := func(k, v string) {
		v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
		b.WriteString(k + ": " + v + "\r\n")
	}
	if o.Software != "" {
		field("software", o.Software)
	}
	field("format", "WARC File Format 1.1")
	field("conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")
	if h, err := os.Hostname(); err == nil {
		field("hostname", h)
	}
	keys := make([]string, 0, len(o.Info))
	for k := range o.Info {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k, o.Info[k])
	}
	return b.String()
}

// Close writes what is queued and closes the current file (renaming it
// from its ".open" name).
func (w *WARCWriter) Close() error { return w.w.Close() }

// warcFetch is what one fetch gives its WARC records: the request as
// sent, the response's head as received and its body as read.
type warcFetch struct {
	w        *WARCWriter
	target   string
	date     time.Time
	ip       string
	request  []byte
	response gowarc.WarcRecordBuilder // the response block, written as the body is read
}

// begin starts the records of a fetch of target: req is written out as
// the HTTP/1.1 message the transport sends for it.
func (w *WARCWriter) begin(req *http.Request, target string) (*warcFetch, error) {
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		return nil, fmt.Errorf("recording the request: %w", err)
	}
	return &warcFetch{w: w, target: target, request: buf.Bytes()}, nil
}

// head writes the response's status line and header fields: as received,
// except that Go gives the field names in canonical case and in sorted
// order, and that a chunked Transfer-Encoding is not written (the body is
// recorded de-chunked, as every reader of the archive wants it).
func (c *warcFetch) head(resp *http.Response) error {
	c.response = gowarc.NewRecordBuilder(gowarc.Response, c.w.recOpt...)
	var b bytes.Buffer
	proto := resp.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	b.WriteString(proto + " " + resp.Status + "\r\n")
	h := resp.Header.Clone()
	h.Del("Transfer-Encoding")
	if err := h.Write(&b); err != nil {
		return err
	}
	b.WriteString("\r\n")
	_, err := c.response.Write(b.Bytes())
	return err
}

// Write adds body bytes to the response record as they are read.
func (c *warcFetch) Write(p []byte) (int, error) { return c.response.Write(p) }

// discard drops the records (a fetch that is not kept).
func (c *warcFetch) discard() {
	if c.response != nil {
		_ = c.response.Close()
		c.response = nil
	}
}

// WARCLocation is where a fetch's records are in the WARC files: the
// file's name (without directory), the offset of the request record's gzip
// member and that of the response record's, which follows it.
type WARCLocation struct {
	File                   string
	Offset, ResponseOffset int64
}

// finish builds the request and response records and writes them
// together; truncated marks a response cut at the body limit. It returns
// where they were written.
func (c *warcFetch) finish(truncated bool) (WARCLocation, error) {
	var none WARCLocation
	if c.response == nil {
		return none, errors.New("no response recorded")
	}
	resp := c.response
	c.response = nil
	add := func(rb gowarc.WarcRecordBuilder, msgtype string) {
		rb.AddWarcHeader(gowarc.WarcTargetURI, c.target)
		rb.AddWarcHeaderTime(gowarc.WarcDate, c.date)
		rb.AddWarcHeader(gowarc.ContentType, "application/http;msgtype="+msgtype)
		if c.ip != "" {
			rb.AddWarcHeader(gowarc.WarcIPAddress, c.ip)
		}
	}
	add(resp, "response")
	if truncated {
		resp.AddWarcHeader(gowarc.WarcTruncated, "length")
	}
	req := gowarc.NewRecordBuilder(gowarc.Request, c.w.recOpt...)
	add(req, "request")
	if _, err := req.Write(c.request); err != nil {
		_ = resp.Close()
		_ = req.Close()
		return none, fmt.Errorf("WARC request record: %w", err)
	}
	reqRec, _, err := req.Build()
	if err != nil {
		_ = resp.Close()
		return none, fmt.Errorf("WARC request record: %w", err)
	}
	respRec, _, err := resp.Build()
	if err != nil {
		_ = reqRec.Close()
		return none, fmt.Errorf("WARC response record: %w", err)
	}
	resps := c.w.w.Write(reqRec, respRec)
	if resps == nil {
		_ = reqRec.Close()
		_ = respRec.Close()
		return none, errors.New("writing WARC records: the WARC writer is closed")
	}
	var errs []error
	for _, r := range resps {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("writing WARC file %s: %w", r.FileName, r.Err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.w.rotateIfFull(resps[len(resps)-1].FileName))
	}
	if err := errors.Join(errs...); err != nil {
		return none, err
	}
	if len(resps) != 2 || resps[0].FileName != resps[1].FileName {
		return none, fmt.Errorf("writing WARC records: %d writes, want the request and the response in one file", len(resps))
	}
	return WARCLocation{File: resps[0].FileName, Offset: resps[0].FileOffset, ResponseOffset: resps[1].FileOffset}, nil
}

// rotateIfFull closes the file the last records went to once it holds
// MaxSize bytes or more (the next write opens the next file).
func (w *WARCWriter) rotateIfFull(name string) error {
	w.rotate.Lock()
	defer w.rotate.Unlock()
	st, err := os.Stat(filepath.Join(w.dir, name+".open"))
	if err != nil || st.Size() < w.maxSize {
		return nil // already closed by another fetch's rotation, or not full
	}
	if err := w.w.Rotate(); err != nil {
		return fmt.Errorf("closing full WARC file %s: %w", name, err)
	}
	return nil
}
