package obs

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitLimit bounds how long a test waits for an event that should come
// at once; it only turns a hang into a clear failure.
const waitLimit = 10 * time.Second

// startServer runs Serve on an ephemeral loopback port and returns the
// base URL; the server is stopped, and must stop cleanly, at cleanup.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, "127.0.0.1:0", h, func(a net.Addr) { addrs <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		cancel()
		t.Fatalf("Serve returned before binding: %v", err)
	case <-time.After(waitLimit):
		cancel()
		t.Fatal("Serve did not bind")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve after cancel: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Serve did not return after its context was cancelled")
		}
	})
	return "http://" + addr.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHealthAndReadiness(t *testing.T) {
	var ready atomic.Bool
	base := startServer(t, Handler(nil, func() error {
		if !ready.Load() {
			return errors.New("store not open")
		}
		return nil
	}))
	tests := []struct {
		name     string
		ready    bool
		path     string
		status   int
		contains string
	}{
		{"alive while not ready", false, "/healthz", 200, "ok"},
		{"not ready", false, "/readyz", 503, "not ready: store not open"},
		{"ready", true, "/readyz", 200, "ready"},
		{"alive when ready", true, "/healthz", 200, "ok"},
		{"no metrics without Metrics", true, "/metrics", 404, ""},
		{"unknown path", true, "/nope", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready.Store(tt.ready)
			status, body := get(t, base+tt.path)
			if status != tt.status || !strings.Contains(body, tt.contains) {
				t.Fatalf("GET %s = %d %q, want %d containing %q", tt.path, status, body, tt.status, tt.contains)
			}
		})
	}
}

func TestReadyWithoutFunc(t *testing.T) {
	base := startServer(t, Handler(nil, nil))
	if status, body := get(t, base+"/readyz"); status != 200 || body != "ready\n" {
		t.Fatalf("GET /readyz = %d %q", status, body)
	}
}

func TestServeEmptyAddrDisabled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	called := false
	if err := Serve(ctx, "", Handler(nil, nil), func(net.Addr) { called = true }); err != nil || called {
		t.Fatalf("Serve(\"\") = %v, bound called %v; want nil and no bind", err, called)
	}
}

func TestServeCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	if err := Serve(ctx, "127.0.0.1:0", Handler(nil, nil), func(net.Addr) { called = true }); err != nil || called {
		t.Fatalf("Serve with a done context = %v, bound called %v; want nil and no bind", err, called)
	}
}

func TestServeBindError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(context.Background(), ln.Addr().String(), Handler(nil, nil), nil)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Serve on a taken port = %v, want an error naming the address", err)
	}
	if err := Serve(context.Background(), "not-an-address", Handler(nil, nil), nil); err == nil {
		t.Fatal("Serve on a malformed address succeeded")
	}
}
