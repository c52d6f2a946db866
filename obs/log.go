package obs

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"drover/config"
)

// NewLogger builds the slog logger the log section of the configuration
// describes: level, text or JSON, written to log.file (appended, created
// with mode 0640) or, when that is empty, to w. The returned close func
// closes the file, if one was opened; call it when the process ends.
//
// A command whose console owns the terminal should pass a log.file, or
// io.Discard as w, so log lines do not tear the screen.
func NewLogger(c config.Log, w io.Writer) (*slog.Logger, func() error, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, nil, fmt.Errorf("obs: log.level %q: expected one of debug, info, warn, error: %w", c.Level, err)
	}
	closeFn := func() error { return nil }
	if c.File != "" {
		f, err := os.OpenFile(c.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("obs: opening log.file: %w", err)
		}
		w, closeFn = f, f.Close
	}
	if w == nil {
		return nil, nil, fmt.Errorf("obs: no log destination: log.file is empty and the writer is nil")
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch c.Format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	default:
		_ = closeFn()
		return nil, nil, fmt.Errorf("obs: log.format %q: expected text or json", c.Format)
	}
	return slog.New(h), closeFn, nil
}
