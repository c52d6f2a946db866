package obs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drover/config"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		name     string
		cfg      config.Log
		wantOut  []string // substrings of the output
		wantNot  []string
		jsonOuts bool
	}{
		{"text at info drops debug", config.Log{Level: "info", Format: "text"},
			[]string{"level=INFO msg=shown", "level=WARN msg=warned"}, []string{"hidden"}, false},
		{"debug shows debug", config.Log{Level: "debug", Format: "text"},
			[]string{"level=DEBUG msg=hidden", "level=INFO msg=shown"}, nil, false},
		{"error only", config.Log{Level: "error", Format: "text"},
			nil, []string{"shown", "warned", "hidden"}, false},
		{"json", config.Log{Level: "warn", Format: "json"},
			[]string{`"level":"WARN"`, `"msg":"warned"`}, []string{"shown"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, closeFn, err := NewLogger(tt.cfg, &buf)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("hidden")
			log.Info("shown")
			log.Warn("warned", "k", 1)
			if err := closeFn(); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if tt.jsonOuts {
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("not JSON: %q", line)
					}
				}
			}
		})
	}
}

func TestNewLoggerToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.log")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	log, closeFn, err := NewLogger(config.Log{Level: "info", Format: "text", File: path}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("to the file")
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "earlier\n") || !strings.Contains(string(b), "msg=\"to the file\"") {
		t.Fatalf("file holds %q, want the old line then the new one", b)
	}
	if stderr.Len() != 0 {
		t.Fatalf("the writer got %q with a log file set", stderr.String())
	}
}

func TestNewLoggerErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   config.Log
		words string
	}{
		{"bad level", config.Log{Level: "loud", Format: "text"}, `log.level "loud"`},
		{"bad format", config.Log{Level: "info", Format: "xml"}, `log.format "xml"`},
		{"unwritable file", config.Log{Level: "info", Format: "text", File: filepath.Join(t.TempDir(), "no", "dir", "x.log")}, "opening log.file"},
	}
	for _, tt := range tests {
		_, _, err := NewLogger(tt.cfg, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.words) {
			t.Errorf("%s: err %v, want one containing %q", tt.name, err, tt.words)
		}
	}
	if _, _, err := NewLogger(config.Log{Level: "info", Format: "text"}, nil); err == nil {
		t.Error("a nil writer without a file was accepted")
	}
}
