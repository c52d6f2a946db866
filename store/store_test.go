package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Options
		wantErr string // substring; "" = valid
		check   func(o Options) error
	}{
		{name: "defaults", o: Options{Path: "x"}, check: func(o Options) error {
			if o.Sync != SyncBatch || o.SyncInterval != DefaultSyncInterval || o.CacheBytes != DefaultCacheBytes || o.Log == nil {
				return fmt.Errorf("defaults not filled: %+v", o)
			}
			return nil
		}},
		{name: "memory needs no path and syncs nothing", o: Options{Memory: true, Sync: SyncAlways}, check: func(o Options) error {
			if o.Sync != SyncNone {
				return fmt.Errorf("memory store Sync = %q, want none", o.Sync)
			}
			return nil
		}},
		{name: "no path", o: Options{}, wantErr: "Path is empty"},
		{name: "bad sync", o: Options{Path: "x", Sync: "sometimes"}, wantErr: `sync policy "sometimes"`},
		{name: "negative interval", o: Options{Path: "x", SyncInterval: -time.Second}, wantErr: "SyncInterval -1s"},
		{name: "negative cache", o: Options{Path: "x", CacheBytes: -1}, wantErr: "CacheBytes -1"},
		{name: "several errors at once", o: Options{Sync: "x", CacheBytes: -1}, wantErr: "CacheBytes -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("validate = %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.check != nil {
				if err := tc.check(tc.o); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestParseSync(t *testing.T) {
	for _, s := range []string{"always", "batch", "none"} {
		if p, err := ParseSync(s); err != nil || string(p) != s {
			t.Errorf("ParseSync(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "Always", "fsync"} {
		if _, err := ParseSync(s); err == nil {
			t.Errorf("ParseSync(%q) succeeded; want an error", s)
		}
	}
}

func TestReopenKeepsDataAndBumpsEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state") // created by Open
	for round := uint64(1); round <= 3; round++ {
		s, err := Open(Options{Path: dir, Log: quiet})
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		if s.Epoch() != round {
			t.Errorf("round %d: Epoch = %d", round, s.Epoch())
		}
		r := keyRec(int(round), KeyDone, base)
		commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
		recs, st := recoverAll(t, s)
		if st.KeysDone != int(round) || len(recs) != int(round) {
			t.Errorf("round %d: recovered %d records (%+v), want %d", round, len(recs), st, round)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestMemoryStore(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != "" || s.SyncPolicy() != SyncNone || s.Epoch() != 1 {
		t.Errorf("memory store: path %q, sync %q, epoch %d", s.Path(), s.SyncPolicy(), s.Epoch())
	}
	r := keyRec(1, KeyQueued, base)
	commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	if st, _, ok, err := s.LookupKey(r.FP); err != nil || !ok || st != KeyQueued {
		t.Errorf("LookupKey = %v, %v, %v", st, ok, err)
	}
	if s.WriteStats().Syncs != 0 {
		t.Errorf("memory store synced %d times", s.WriteStats().Syncs)
	}
}

func TestSecondOpenInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	openT(t, Options{Path: dir})
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, dir + "/.", filepath.Join(dir, "..", filepath.Base(dir)), link} {
		_, err := Open(Options{Path: p, Log: quiet})
		if !IsLocked(err) {
			t.Fatalf("second Open(%q) = %v; want ErrLocked", p, err)
		}
		if !strings.Contains(err.Error(), filepath.Clean(p)) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
			t.Errorf("error %q does not name the path and this pid", err)
		}
	}
}

// TestLockHolderChild holds a store open for TestSecondOpenFromAnotherProcess.
func TestLockHolderChild(t *testing.T) {
	dir := os.Getenv("DROVER_STORE_LOCK_CHILD")
	if dir == "" {
		t.Skip("helper process for TestSecondOpenFromAnotherProcess")
	}
	s, err := Open(Options{Path: dir, Log: quiet})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	if err := s.Close(); err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

func TestSecondOpenFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderChild$")
	cmd.Env = append(os.Environ(), "DROVER_STORE_LOCK_CHILD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v; want locked", line, err)
	}
	_, err = Open(Options{Path: dir, Log: quiet})
	if !IsLocked(err) {
		t.Fatalf("Open while another process holds the store = %v; want ErrLocked", err)
	}
	if want := fmt.Sprintf("pid %d", cmd.Process.Pid); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the path and %q", err, want)
	}
	t.Logf("lock error: %v", err)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(Options{Path: dir, Log: quiet}) // free again
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	if s.Epoch() != 2 {
		t.Errorf("Epoch = %d, want 2", s.Epoch())
	}
	_ = s.Close()
}

// populated makes a closed on-disk store holding keys in tables and in the
// log, and returns its directory.
func populated(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(Options{Path: dir, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	for i := range 2000 {
		r := keyRec(i, KeyDone, base)
		_ = b.PutKey(&r)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil { // into a table
		t.Fatal(err)
	}
	r := keyRec(5000, KeyQueued, base)
	commitT(t, s, func(b *Batch) error { return b.PutKey(&r) }) // in the log only
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func filesMatching(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	return m
}

// scribble overwrites n bytes of a file at off (negative: from the end).
func scribble(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if off < 0 {
		off += fi.Size()
	}
	if off < 0 || off+int64(n) > fi.Size() {
		off, n = 0, int(fi.Size())
	}
	garbage := make([]byte, n)
	for i := range garbage {
		garbage[i] = byte(i*131 + 7)
	}
	if _, err := f.WriteAt(garbage, off); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptStoreIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"garbage manifest", func(t *testing.T, dir string) {
			for _, m := range filesMatching(t, dir, "MANIFEST-*") {
				scribble(t, m, 0, 1<<20)
			}
		}},
		{"truncated manifest", func(t *testing.T, dir string) {
			for _, m := range filesMatching(t, dir, "MANIFEST-*") {
				if err := os.Truncate(m, 0); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"garbage in the middle of a table", func(t *testing.T, dir string) {
			scribble(t, filesMatching(t, dir, "*.sst")[0], 200, 512)
		}},
		{"garbage over a table's footer", func(t *testing.T, dir string) {
			scribble(t, filesMatching(t, dir, "*.sst")[0], -64, 64)
		}},
		{"a table is missing", func(t *testing.T, dir string) {
			if err := os.Remove(filesMatching(t, dir, "*.sst")[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{"the manifest is a directory", func(t *testing.T, dir string) {
			for _, m := range filesMatching(t, dir, "MANIFEST-*") {
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(m, 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"manifest markers are missing", func(t *testing.T, dir string) {
			for _, m := range filesMatching(t, dir, "marker.manifest.*") {
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := populated(t)
			tc.damage(t, dir)
			before := listDir(t, dir)
			s, err := Open(Options{Path: dir, Log: quiet})
			if err == nil {
				// Table damage may only show when the table is read.
				_, err = s.Recover(func(Record) error { return nil })
				_ = s.Close()
			}
			if !IsCorrupt(err) {
				t.Fatalf("opening and recovering a damaged store = %v; want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the store", err)
			}
			t.Logf("error: %v", err)
			if after := listDir(t, dir); !containsAll(after, before) {
				t.Errorf("files were removed: before %v, after %v", before, after)
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".sst") { // logs may be replayed into a new table
			names = append(names, e.Name())
		}
	}
	return names
}

func containsAll(have, want []string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

func TestUnusablePathIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  error
	}{
		{"a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrUnusable},
		{"under a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "store")
		}, ErrUnusable},
		{"a directory of other files", func(t *testing.T) string {
			p := t.TempDir()
			if err := os.WriteFile(filepath.Join(p, "notes.txt"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrUnusable},
		{"a store of another format version", func(t *testing.T) string {
			p := t.TempDir()
			s, err := Open(Options{Path: p, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.db.Set(internalKey(internalFormat), be64(99), nil); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			return p
		}, ErrUnusable},
		{"a Pebble database that is not a drover store", func(t *testing.T) string {
			p := t.TempDir()
			s, err := Open(Options{Path: p, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			_ = s.db.Delete(internalKey(internalFormat), nil)
			_ = s.db.Set([]byte("foreign"), []byte("data"), nil)
			_ = s.Close()
			return p
		}, ErrUnusable},
		{"a symlink loop", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "loop")
			if err := os.Symlink(p, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrUnusable},
		{"an unreadable directory", func(t *testing.T) string {
			if os.Geteuid() == 0 {
				t.Skip("permissions do not bind root")
			}
			p := populated(t)
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(p, 0o700) })
			return p
		}, ErrUnusable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.setup(t)
			_, err := Open(Options{Path: p, Log: quiet})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open(%s) = %v; want %v", p, err, tc.want)
			}
			t.Logf("error: %v", err)
		})
	}
}

// A store whose creation was interrupted before any data (Pebble files but
// no format version) is completed rather than refused.
func TestInterruptedCreationIsCompleted(t *testing.T) {
	p := t.TempDir()
	s, err := Open(Options{Path: p, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.db.Delete(internalKey(internalFormat), nil)
	_ = s.db.Delete(internalKey(internalEpoch), nil)
	_ = s.Close()
	s = openT(t, Options{Path: p})
	if s.Epoch() != 1 {
		t.Errorf("Epoch = %d, want 1", s.Epoch())
	}
}

func TestClosedStore(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	r := keyRec(1, KeyDone, base)
	_ = b.PutKey(&r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}
	if _, _, _, err := s.LookupKey(r.FP); !errors.Is(err, ErrClosed) {
		t.Errorf("LookupKey after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Recover(func(Record) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Recover after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Sweep(base, time.Hour, time.Hour); !errors.Is(err, ErrClosed) {
		t.Errorf("Sweep after Close = %v, want ErrClosed", err)
	}
}

// setFormat opens the store at p and marks it with format version v.
func setFormat(t *testing.T, p string, v uint64) {
	t.Helper()
	s, err := Open(Options{Path: p, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := keyRec(1, KeyDone, base)
	commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
	if err := s.db.Set(internalKey(internalFormat), be64(v), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A store of format version 1 opens, keeps its records and is upgraded to
// version 2 (grouped expiry entries, version 2 job values), durably (an older drover then refuses it); a store
// of a newer version is refused, naming it.
func TestFormatVersion(t *testing.T) {
	p := t.TempDir()
	setFormat(t, p, 1)
	for range 2 { // upgraded, then opened again as it is
		s, err := Open(Options{Path: p, Log: quiet})
		if err != nil {
			t.Fatalf("Open of a version 1 store: %v", err)
		}
		if v, ok, err := s.getUint64(internalKey(internalFormat)); err != nil || !ok || v != 2 {
			t.Errorf("format after Open = %d, %v, %v; want 2", v, ok, err)
		}
		if st, _, ok, err := s.LookupKey(testFP(1)); err != nil || !ok || st != KeyDone {
			t.Errorf("key 1 = %v, %v, %v; want done", st, ok, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	p = t.TempDir()
	setFormat(t, p, 3)
	_, err := Open(Options{Path: p, Log: quiet})
	if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "format version 3,") {
		t.Fatalf("Open of a version 3 store = %v; want ErrUnusable naming the version", err)
	}
}
