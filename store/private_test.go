package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The store's directory is 0700 and its files 0600, whatever the umask;
// an existing directory open to others is narrowed.
func TestStoreFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o002) // the most permissive umask in common use
	defer syscall.Umask(old)
	for _, existing := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "parent", "store")
		if existing {
			if err := os.MkdirAll(path, 0o775); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(Options{Path: path, Sync: SyncAlways})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != dirMode {
			t.Errorf("existing %v: directory mode %04o, want %04o", existing, fi.Mode().Perm(), dirMode)
		}
		n := 0
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: mode %04o, want none for group and others", p, info.Mode().Perm())
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Fatalf("walk: %v, %d files", err, n)
		}
	}
}
