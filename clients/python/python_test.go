package python

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// python returns a Python 3 that can import the modules named, preferring
// the one on PATH, then Debian's (/usr/bin/python3, where apt-get installs
// python3-zmq and python3-scrapy). Without one the test skips, except in
// CI (CI=true), where scripts/deps.sh test installs them and a skip would
// hide a broken install.
func python(t *testing.T, modules ...string) string {
	t.Helper()
	check := "import " + "sys"
	for _, m := range modules {
		check += ", " + m
	}
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", check).Run() == nil {
			return p
		}
	}
	msg := "no python3 that can import " + check[len("import sys, "):] + " (Debian: apt-get install python3-zmq python3-scrapy, or scripts/deps.sh test)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the drover binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// droverBinary builds drover from this tree, once for the package's tests.
func droverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-python-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "drover")
		if out, err := exec.Command("go", "build", "-o", binPath, "drover").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// runUnittest runs python -m unittest on the pattern in this directory.
func runUnittest(t *testing.T, py, bin, pattern string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-p", pattern, "-v")
	cmd.Env = append(os.Environ(), "DROVER_BIN="+bin, "PYTHONDONTWRITEBYTECODE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || testing.Verbose() {
		t.Logf("python -m unittest -p %s:\n%s", pattern, out.String())
	}
	if err != nil {
		t.Fatalf("the Python tests failed: %v", err)
	}
	if bytes.Contains(out.Bytes(), []byte("skipped")) && os.Getenv("CI") != "" {
		t.Fatalf("Python tests were skipped in CI:\n%s", out.String())
	}
}

// TestConformance runs every vector of conformance/ through the Python
// client's codec and URL normalisation (standard library only).
func TestConformance(t *testing.T) {
	runUnittest(t, python(t), "", "test_conformance.py")
}

// TestPythonClient runs the Python worker and producer against a real
// drover serve: every command, verdict, status, outcome, reason and error
// code, the events they cause, and a worker keeping its job across a
// coordinator crash. Its last test (tests/coverage.py) lists every name
// docs/PROTOCOL.md gives (commands, error codes, close reasons, reasons,
// verdicts, statuses, outcomes, event kinds) and fails unless the suite
// exercised all of them but a named list of gaps a real serve cannot be
// made to produce. (go test caches this test on the Go files only: use
// -count=1 after changing the Python files.)
func TestPythonClient(t *testing.T) {
	py := python(t, "zmq")
	bin := droverBinary(t)
	runUnittest(t, py, bin, "test_[rs]e*.py")
}

// TestScrapy: two real Scrapy processes (Debian's python3-scrapy) with the
// drover scheduler and dupefilter crawl one local site through a real
// drover serve, and every page is fetched exactly once, by one of them.
func TestScrapy(t *testing.T) {
	py := python(t, "zmq", "scrapy")
	bin := droverBinary(t)
	runUnittest(t, py, bin, "test_scrapy.py")
}
