package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/spf13/cobra"

	"drover/admin"
	"drover/crawl"
	"drover/net/client"
)

// A fleet crawl's archive (issue 23): each crawl worker run with --warc DIR
// writes its fetches to WARC shards of its own, and each page record it
// sends the coordinator says where its records are (warc_file, warc_offset,
// warc_response_offset). The coordinator's results are so the crawl's
// index; drover warc index prints it as CDX, and drover warc gather copies
// the records the results name, once each, from the shards into one WARC
// file with a CDX index of its own.

func newWARCCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "warc",
		Short: "Index and gather a fleet crawl's WARC shards",
		Long: `Crawl workers run with --warc DIR write their fetches to WARC shards of their own
(DIR/drover-WORKER-00001.warc.gz, ...), and each page record they send the
coordinator names the shard and the offsets of the page's request and response
records in it. The coordinator's results are so the crawl's index:

  drover warc index --crawler NAME         prints it as CDX (CDX N b a m s k r M S V g)
  drover warc gather --crawler NAME --out crawl.warc.gz DIR...
                                           copies each page's records, once, from the
                                           shards found in the DIRs into one WARC file
                                           and writes its CDX index beside it

Copy (rsync, scp) or mount the workers' WARC directories on the machine that
gathers. Only pages whose result is ok and names a shard are gathered (a page
fetched by an attempt whose result was not recorded, or twice, is in a shard
but not in the results: it is left out).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newWARCIndexCmd(), newWARCGatherCmd())
	return cmd
}

// warcEntry is one page of the crawl's results with its shard location.
type warcEntry struct {
	crawl.Record
	cursor uint64
}

// readWARCEntries reads the crawler's ok results that name a WARC shard,
// oldest first.
func readWARCEntries(ctx context.Context, cmd *cobra.Command, crawler string) ([]warcEntry, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	a, err := dialAdmin(ctx, cmd, cfg, client.AdminOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	var out []warcEntry
	f := resultFollower{a: a, filter: resultsFilter(crawler, ""), warn: cmd.ErrOrStderr()}
	_, err = f.run(ctx, 0, func(rows []admin.Result) error {
		for i := range rows {
			r := &rows[i]
			if r.Outcome != "ok" || r.Output == "" {
				continue
			}
			var rec crawl.Record
			if json.Unmarshal([]byte(r.Output), &rec) != nil || rec.WARCFile == "" {
				continue // not a crawl page record, or not archived
			}
			out = append(out, warcEntry{Record: rec, cursor: r.Cursor})
		}
		return nil
	})
	return out, err
}

func newWARCIndexCmd() *cobra.Command {
	var crawler string
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Print the crawl's WARC index (CDX) from the coordinator's results",
		Long: `index prints a CDX line (CDX N b a m s k r M S V g) for each page of the crawl
whose result names a WARC shard: the offset (V) of its response record in the shard
(g). The digest (k) and the compressed length (S) are "-": they are in the shards,
which the coordinator does not have; drover warc gather's index has them.`,
		Example: "  drover warc index --crawler news > news.cdx",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			es, err := readWARCEntries(ctx, cmd, crawler)
			if err != nil {
				return fmt.Errorf("warc index: %w", err)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			fmt.Fprintln(w, " CDX N b a m s k r M S V g")
			for _, e := range es {
				fmt.Fprintln(w, cdxLine(&e.Record, "-", "-", e.WARCResponseOffset, e.WARCFile))
			}
			return w.Flush()
		},
	}
	addAdminFlags(cmd, true)
	cmd.Flags().StringVar(&crawler, "crawler", "", "the crawl (its crawler name); empty: every crawl")
	return cmd
}

func newWARCGatherCmd() *cobra.Command {
	var crawler, out string
	cmd := &cobra.Command{
		Use:   "gather --out FILE.warc.gz DIR...",
		Short: "Gather a fleet crawl's WARC shards into one WARC file",
		Long: `gather reads the crawl's results from the coordinator and copies each page's
request and response records, as they are in the shards (gzip members), from the
shard found in one of the DIRs into FILE.warc.gz, after a warcinfo record, in the
order the pages finished; FILE.cdx gets their CDX index. A record is checked
before it is copied (its response's WARC-Target-URI must be the page's URL); a
shard or record that is missing or wrong is named and the command exits 1 after
gathering the others. A shard a worker still writes (NAME.warc.gz.open) is read
as well.`,
		Example: "  rsync -a worker1:/var/lib/drover/warc/ shards/w1/\n  drover warc gather --crawler news --out news.warc.gz shards/*",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if !strings.HasSuffix(out, ".warc.gz") {
				return usageError("warc gather: --out %q: want a file name ending in .warc.gz", out)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			start := time.Now()
			es, err := readWARCEntries(ctx, cmd, crawler)
			if err != nil {
				return fmt.Errorf("warc gather: %w", err)
			}
			st, err := gatherWARC(out, strings.TrimSuffix(out, ".warc.gz")+".cdx", dirs, es)
			if err != nil {
				return fmt.Errorf("warc gather: %w", err)
			}
			el := time.Since(start)
			fmt.Fprintf(cmd.OutOrStdout(), "gathered %d pages from %d shards into %s (%d bytes, index %s) in %v: %.1f MB/s\n",
				st.pages, st.shards, out, st.bytes, strings.TrimSuffix(out, ".warc.gz")+".cdx", el.Round(time.Millisecond),
				float64(st.bytes)/1e6/max(el.Seconds(), 1e-9))
			if len(st.missing) > 0 {
				for _, m := range st.missing {
					fmt.Fprintln(cmd.ErrOrStderr(), "warc gather:", m)
				}
				return &exitError{code: 1, err: fmt.Errorf("warc gather: %d pages not gathered", len(st.missing))}
			}
			return nil
		},
	}
	addAdminFlags(cmd, true)
	cmd.Flags().StringVar(&crawler, "crawler", "", "the crawl (its crawler name); empty: every crawl")
	cmd.Flags().StringVar(&out, "out", "", "the WARC file to write (FILE.warc.gz; its index goes to FILE.cdx)")
	must(cmd.MarkFlagRequired("out"))
	return cmd
}

// gatherStats say what gatherWARC did.
type gatherStats struct {
	pages, shards int
	bytes         int64
	missing       []string // pages not gathered, and why
}

// gatherWARC writes the records of es, found in the shards under dirs, to
// out, and their index to cdx.
func gatherWARC(out, cdx string, dirs []string, es []warcEntry) (gatherStats, error) {
	var st gatherStats
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return st, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	info, err := warcinfoMember(filepath.Base(out), len(es))
	if err != nil {
		return st, err
	}
	bw.Write(info)
	pos := int64(len(info))
	var idx bytes.Buffer
	idx.WriteString(" CDX N b a m s k r M S V g\n")
	shards := map[string]*os.File{}
	defer func() {
		for _, s := range shards {
			if s != nil {
				s.Close()
			}
		}
	}()
	open := func(name string) *os.File {
		if s, ok := shards[name]; ok {
			return s
		}
		var s *os.File
		for _, d := range dirs {
			for _, n := range []string{name, name + ".open"} {
				if s == nil {
					s, _ = os.Open(filepath.Join(d, n))
				}
			}
		}
		shards[name] = s
		return s
	}
	seen := map[string]bool{}
	for i := range es {
		e := &es[i]
		if seen[e.URL] {
			continue // requeued and fetched again: the first record stays
		}
		shard := open(e.WARCFile)
		if shard == nil || filepath.Base(e.WARCFile) != e.WARCFile {
			st.missing = append(st.missing, fmt.Sprintf("%s: shard %s not found in %s", e.URL, e.WARCFile, strings.Join(dirs, ", ")))
			continue
		}
		reqLen, _, err := gzipMember(shard, e.WARCOffset)
		if err == nil && e.WARCOffset+reqLen != e.WARCResponseOffset {
			err = fmt.Errorf("the request record at %d ends at %d, not where the response record begins (%d)", e.WARCOffset, e.WARCOffset+reqLen, e.WARCResponseOffset)
		}
		var respLen int64
		var head []byte
		if err == nil {
			respLen, head, err = gzipMember(shard, e.WARCResponseOffset)
		}
		var digest string
		if err == nil {
			var target string
			target, digest = warcHeader(head, "WARC-Target-URI"), warcHeader(head, "WARC-Payload-Digest")
			if target != e.URL {
				err = fmt.Errorf("the response record at %d is of %q", e.WARCResponseOffset, target)
			}
		}
		if err != nil {
			st.missing = append(st.missing, fmt.Sprintf("%s: shard %s: %v", e.URL, e.WARCFile, err))
			continue
		}
		if _, err := io.Copy(bw, io.NewSectionReader(shard, e.WARCOffset, reqLen+respLen)); err != nil {
			return st, fmt.Errorf("copying %s from %s: %w", e.URL, e.WARCFile, err)
		}
		_, d, _ := strings.Cut(digest, ":")
		idx.WriteString(cdxLine(&e.Record, strconv.FormatInt(respLen, 10), d, pos+reqLen, filepath.Base(out)) + "\n")
		pos += reqLen + respLen
		seen[e.URL] = true
		st.pages++
	}
	for _, s := range shards {
		if s != nil {
			st.shards++
		}
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	if err := f.Sync(); err != nil {
		return st, err
	}
	st.bytes = pos
	return st, os.WriteFile(cdx, idx.Bytes(), 0o644)
}

// warcinfoMember is the gathered file's warcinfo record as a gzip member.
func warcinfoMember(name string, pages int) ([]byte, error) {
	rb := gowarc.NewRecordBuilder(gowarc.Warcinfo, gowarc.WithVersion(gowarc.V1_1), gowarc.WithAddMissingDigest(true),
		gowarc.WithDefaultDigestAlgorithm("sha1"), gowarc.WithDefaultDigestEncoding(gowarc.Base32))
	rb.AddWarcHeader(gowarc.WarcFilename, name)
	rb.AddWarcHeaderTime(gowarc.WarcDate, time.Now())
	rb.AddWarcHeader(gowarc.ContentType, "application/warc-fields")
	if _, err := fmt.Fprintf(rb, "software: drover/%s\r\nformat: WARC File Format 1.1\r\ndescription: %d pages gathered from a fleet crawl's shards by drover warc gather\r\n", version, pages); err != nil {
		return nil, err
	}
	rec, _, err := rb.Build()
	if err != nil {
		return nil, fmt.Errorf("warcinfo record: %w", err)
	}
	defer rec.Close()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, _, err := gowarc.NewMarshaler().Marshal(zw, rec, 0); err != nil {
		return nil, fmt.Errorf("warcinfo record: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// gzipMember decodes the gzip member at off in f and returns its length
// in f and the start of its content (the WARC record's header).
func gzipMember(f *os.File, off int64) (int64, []byte, error) {
	cr := crawl.NewByteCounter(io.NewSectionReader(f, off, 1<<62))
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return 0, nil, fmt.Errorf("no gzip member at %d: %w", off, err)
	}
	zr.Multistream(false)
	var head bytes.Buffer
	if _, err := io.Copy(&limitedBuffer{b: &head, n: 64 << 10}, zr); err != nil {
		return 0, nil, fmt.Errorf("the gzip member at %d: %w", off, err)
	}
	if !bytes.HasPrefix(head.Bytes(), []byte("WARC/")) {
		return 0, nil, fmt.Errorf("the gzip member at %d is not a WARC record", off)
	}
	return cr.N, head.Bytes(), nil
}

// limitedBuffer keeps the first n bytes written to it and discards the
// rest.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// warcHeader is the value of the named field in a WARC record's header.
func warcHeader(rec []byte, name string) string {
	head, _, _ := bytes.Cut(rec, []byte("\r\n\r\n"))
	for _, l := range strings.Split(string(head), "\r\n")[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.Trim(strings.TrimSpace(v), "<>")
		}
	}
	return ""
}

// cdxLine is a page's line of a CDX N b a m s k r M S V g index.
func cdxLine(r *crawl.Record, length, digest string, offset int64, file string) string {
	mime, _, _ := strings.Cut(r.ContentType, ";")
	mime = strings.TrimSpace(mime)
	field := func(s string) string {
		if s == "" || strings.ContainsAny(s, " \t\n") {
			return "-"
		}
		return s
	}
	return strings.Join([]string{surt(r.URL), r.FetchedAt.UTC().Format("20060102150405"), r.URL, field(mime),
		strconv.Itoa(r.Status), field(digest), "-", "-", length, strconv.FormatInt(offset, 10), file}, " ")
}

// surt is the CDX key of a URL: the host name's labels reversed and joined
// by commas, a leading www dropped (an IP address as it is), the port if any, then ")" and the path
// and query.
func surt(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	key := strings.ToLower(u.Hostname())
	if net.ParseIP(key) == nil { // an address stays as it is
		labels := strings.Split(strings.TrimPrefix(key, "www."), ".")
		slices.Reverse(labels)
		key = strings.Join(labels, ",")
	}
	if p := u.Port(); p != "" {
		key += ":" + p
	}
	key += ")" + u.EscapedPath()
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return strings.ReplaceAll(key, " ", "%20")
}
