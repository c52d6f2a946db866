package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"drover/admin"
	"drover/net/client"
)

// resultFiles writes the coordinator's results, the lines drover results
// prints, to rotating files in a directory: results-00000001.jsonl,
// results-00000002.jsonl, ... each closed once it reaches maxBytes. On
// start it resumes after the last complete line of the newest file (a
// partial line left by a crash is cut off), so the files hold every result
// once, in cursor order, whatever crashes happened (results deleted by
// retention before they were written excepted).
type resultFiles struct {
	dir      string
	maxBytes int64
	f        *os.File
	w        *bufio.Writer
	n        int   // the current file's number
	size     int64 // its size
}

const resultFilePattern = "results-%08d.jsonl"

// openResultFiles opens dir (made 0700 when missing) and returns the
// writer and the cursor to resume after.
func openResultFiles(dir string, maxBytes int64) (*resultFiles, uint64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("results.dir %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("results.dir %s: %w", dir, err)
	}
	var nums []int
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), resultFilePattern, &n); err == nil && e.Name() == fmt.Sprintf(resultFilePattern, n) {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	rf := &resultFiles{dir: dir, maxBytes: maxBytes, n: 1}
	var cursor uint64
	// The newest file with a complete line says where to resume.
	for i := len(nums) - 1; i >= 0 && cursor == 0; i-- {
		c, err := lastCursor(filepath.Join(dir, fmt.Sprintf(resultFilePattern, nums[i])))
		if err != nil {
			return nil, 0, err
		}
		cursor = c
	}
	if len(nums) > 0 {
		rf.n = nums[len(nums)-1]
	}
	if err := rf.open(); err != nil {
		return nil, 0, err
	}
	return rf, cursor, nil
}

// lastCursor cuts a partial last line off the file at path and returns the
// cursor of its last complete line (0: none).
func lastCursor(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("results file: %w", err)
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	if end < len(data) {
		if err := os.Truncate(path, int64(end)); err != nil {
			return 0, fmt.Errorf("results file %s: cutting off a partial line: %w", path, err)
		}
	}
	data = data[:end]
	if len(data) == 0 {
		return 0, nil
	}
	start := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	var line struct {
		Cursor uint64 `json:"cursor"`
	}
	if err := json.Unmarshal(data[start:], &line); err != nil || line.Cursor == 0 {
		return 0, fmt.Errorf("results file %s: last line is not a result with a cursor: %q", path, clipText(string(data[start:]), 80))
	}
	return line.Cursor, nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (rf *resultFiles) open() error {
	path := filepath.Join(rf.dir, fmt.Sprintf(resultFilePattern, rf.n))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("results file: %w", err)
	}
	rf.f, rf.w, rf.size = f, bufio.NewWriterSize(f, 256<<10), st.Size()
	return nil
}

// write appends rows, rotating as the files fill, and flushes them to the
// file (a crash of this process then loses none of them).
func (rf *resultFiles) write(rows []admin.Result) error {
	for i := range rows {
		if rf.size >= rf.maxBytes {
			if err := rf.rotate(); err != nil {
				return err
			}
		}
		b, err := json.Marshal(&rows[i])
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if _, err := rf.w.Write(b); err != nil {
			return fmt.Errorf("results file: %w", err)
		}
		rf.size += int64(len(b))
	}
	if err := rf.w.Flush(); err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	return nil
}

func (rf *resultFiles) rotate() error {
	if err := rf.close(); err != nil {
		return err
	}
	rf.n++
	return rf.open()
}

// close flushes and syncs the current file and closes it.
func (rf *resultFiles) close() error {
	if rf.f == nil {
		return nil
	}
	err := rf.w.Flush()
	if serr := rf.f.Sync(); err == nil {
		err = serr
	}
	if cerr := rf.f.Close(); err == nil {
		err = cerr
	}
	rf.f = nil
	if err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	return nil
}

// writeResultFiles follows the results of the coordinator at endpoint (in
// this process) into dir until ctx ends.
func writeResultFiles(ctx context.Context, endpoint, dir string, maxBytes int64, log *slog.Logger) error {
	rf, from, err := openResultFiles(dir, maxBytes)
	if err != nil {
		return err
	}
	defer func() {
		if err := rf.close(); err != nil {
			log.Error("results files", "err", err)
		}
	}()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: endpoint, ID: "results-files", ReadOnly: true, Log: log})
	if err != nil {
		return ignoreCanceled(err)
	}
	defer a.Close()
	log.Info("writing results to files", "dir", dir, "from", from, "file_bytes", maxBytes)
	f := resultFollower{a: a, follow: true, log: log}
	_, err = f.run(ctx, from, rf.write)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
