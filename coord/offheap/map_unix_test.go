//go:build linux

package offheap

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping that holds b, as
// /proc/self/smaps lists them (the kernel may have merged b's region with
// a neighbour that has the same flags: the entry is the one whose range
// holds b's address).
func vmFlags(t *testing.T, b []byte) []string {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	in := false
	for line := range strings.Lines(string(smaps)) {
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if in {
				return strings.Fields(rest)
			}
			continue
		}
		// A mapping's first line: "start-end perms offset dev inode path".
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			in = start <= addr && addr < end
		}
	}
	t.Fatalf("no mapping holds %#x in /proc/self/smaps", addr)
	return nil
}

// TestRegionHugePages: a table's region asks for transparent huge pages
// ("hg" in its VmFlags) by default and for none ("nh") after SmallPages,
// whatever the host's THP setting (enabled always, madvise or never), on
// a kernel built with transparent huge pages.
func TestRegionHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skipf("a kernel without transparent huge pages (%v): madvise refuses both hints", err)
	}
	for _, small := range []bool{false, true} {
		type owner struct{}
		m := New(&owner{})
		if small {
			m.SmallPages()
		}
		r := m.Table(2 * hugePage)
		flags := vmFlags(t, r)
		want, not := "hg", "nh"
		if small {
			want, not = not, want
		}
		if !slices.Contains(flags, want) || slices.Contains(flags, not) {
			t.Errorf("SmallPages %v: the region's VmFlags are %v, want %q and not %q", small, flags, want, not)
		}
		m.Release(r)
	}
}
