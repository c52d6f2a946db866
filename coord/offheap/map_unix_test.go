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
//
// The file is not one snapshot: the kernel writes it a buffer at a time,
// and between two reads the Go runtime (the heap, other tests' regions
// unmapped by their owners' cleanups) may map, unmap, split or merge
// mappings. A read that found no entry holding b is tried again, a few
// times; the flags of the entry found are not, so a region with the wrong
// ones fails at once.
func vmFlags(t *testing.T, b []byte) []string {
	t.Helper()
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	for range 5 {
		smaps, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			t.Skipf("no /proc/self/smaps: %v", err)
		}
		if flags, ok := smapsFlags(string(smaps), addr); ok {
			return flags
		}
	}
	t.Fatalf("no mapping holds %#x in /proc/self/smaps, in 5 reads", addr)
	return nil
}

// smapsFlags returns the VmFlags of the entry of smaps whose range holds
// addr, and whether there is one.
func smapsFlags(smaps string, addr uint64) ([]string, bool) {
	in := false
	for line := range strings.Lines(smaps) {
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if in {
				return strings.Fields(rest), true
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
	return nil, false
}

// TestSmapsFlags: the entry found is the one whose range holds the
// address, start included and end excluded, and none holds an address
// between two entries.
func TestSmapsFlags(t *testing.T) {
	const smaps = `7f0000000000-7f0000200000 rw-p 00000000 00:00 0
Size:               2048 kB
VmFlags: rd wr mr mw me ac sd
7f0000200000-7f0000600000 rw-p 00000000 00:00 0
Size:               4096 kB
THPeligible:        1
VmFlags: rd wr mr mw me ac sd hg
7f0000800000-7f0000a00000 r--p 00001000 08:01 1234 /usr/lib/x-y.so
VmFlags: rd mr mw me sd nh
`
	for _, tc := range []struct {
		addr uint64
		want string // the last flag; "" for no entry
	}{
		{0x7f0000000000, "sd"},
		{0x7f00001fffff, "sd"},
		{0x7f0000200000, "hg"},
		{0x7f0000400000, "hg"},
		{0x7f0000600000, ""},
		{0x7f0000900000, "nh"},
		{0x7f0000a00000, ""},
	} {
		flags, ok := smapsFlags(smaps, tc.addr)
		got := ""
		if ok {
			got = flags[len(flags)-1]
		}
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("%#x: flags %v (found %v), want the entry ending in %q", tc.addr, flags, ok, tc.want)
		}
	}
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
