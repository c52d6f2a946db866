package obs

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc reports whether the process is ready for work: nil when it is,
// otherwise an error saying what it waits for.
type ReadyFunc func() error

// RequireToken wraps h so that requests for path need the header
// "Authorization: Bearer token" (compared in constant time); others get
// 401 with a WWW-Authenticate challenge. An empty token requires nothing.
// /metrics takes it when bound beyond loopback (metrics.token); /healthz
// and /readyz stay open for probes.
func RequireToken(h http.Handler, path, token string) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
			http.Error(w, "a bearer token is required (metrics.token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Handler serves
//
//	/metrics  the registry of m in the Prometheus exposition formats
//	/healthz  200 "ok" while the process lives
//	/readyz   200 "ready" when ready returns nil, else 503 with its error
//
// m may be nil (no /metrics), and ready may be nil (always ready).
func Handler(m *Metrics, ready ReadyFunc) http.Handler {
	mux := http.NewServeMux()
	if m != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
			Registry:      m.reg, // counts scrape errors in promhttp_metric_handler_errors_total
			ErrorHandling: promhttp.ContinueOnError,
		}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ShutdownTimeout bounds how long Serve waits for requests in flight once
// its context is done.
const ShutdownTimeout = 5 * time.Second

// Serve listens on addr (HOST:PORT; port 0 picks a free one) and serves h
// until ctx is done, then shuts down gracefully and returns nil. bound,
// when not nil, is called with the bound address before serving. An empty
// addr disables the server, and a ctx already done stops it before it
// starts: Serve returns nil at once.
func Serve(ctx context.Context, addr string, h http.Handler, bound func(net.Addr)) error {
	if addr == "" || ctx.Err() != nil {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("obs: listening for metrics on %q: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	if bound != nil {
		bound(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("obs: serving metrics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("obs: shutting down the metrics server on %s: %w", ln.Addr(), err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("obs: serving metrics on %s: %w", ln.Addr(), err)
	}
	return nil
}
