package crawl

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
)

// warcBegin starts the WARC records of p's fetch: the request goes out
// with the archive's header (asking for gzip itself, so that the transport
// leaves a compressed body as it came) and is recorded as written.
func (f *Fetcher) warcBegin(req *http.Request, norm string, p *Page) (*warcFetch, error) {
	req.Header = f.warcHeader
	rec, err := f.warc.begin(req, norm)
	if err != nil {
		return nil, err
	}
	rec.date = p.FetchedAt
	return rec, nil
}

// traced returns req with a trace that notes the address of the server
// the request went to (WARC-IP-Address).
func (c *warcFetch) traced(req *http.Request) *http.Request {
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if a, ok := info.Conn.RemoteAddr().(*net.TCPAddr); ok {
			c.ip = a.IP.String()
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}

// contentReader is what the parser reads of body: with the archive on,
// the body as it came, so a gzip Content-Encoding is undone here (without
// the archive the transport undid it).
func contentReader(body io.Reader, resp *http.Response, archiving bool) io.Reader {
	if archiving && strings.EqualFold(strings.TrimSpace(resp.Header.Get("Content-Encoding")), "gzip") {
		return &lazyGunzip{r: body}
	}
	return body
}

// lazyGunzip undoes gzip on first read (a body nobody reads costs nothing).
type lazyGunzip struct {
	r  io.Reader
	zr *gzip.Reader
}

func (l *lazyGunzip) Read(p []byte) (int, error) {
	if l.zr == nil {
		zr, err := gzip.NewReader(l.r)
		if err != nil {
			return 0, fmt.Errorf("gzip content-encoding: %w", err)
		}
		l.zr = zr
	}
	return l.zr.Read(p)
}
