package python

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// droverBinary builds drover from this tree into a temporary directory.
func droverBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "drover")
	cmd := exec.Command("go", "build", "-o", bin, "drover")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
// coordinator crash.
func TestPythonClient(t *testing.T) {
	py := python(t, "zmq")
	bin := droverBinary(t)
	runUnittest(t, py, bin, "test_[rs]e*.py")
}
