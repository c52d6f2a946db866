//go:build unix

package store

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// lockHolder names the process holding the POSIX write lock on the file at
// path (Pebble locks its LOCK file with fcntl), or returns "" when it cannot
// tell.
func lockHolder(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK || lk.Pid <= 0 {
		return ""
	}
	h := fmt.Sprintf("pid %d", lk.Pid)
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", lk.Pid)); err == nil && len(cmd) > 0 {
		c := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if len(c) > 200 {
			c = c[:200] + "..."
		}
		h += " (" + c + ")"
	}
	return h
}
