//go:build linux

package offheap

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping that starts at b, as
// /proc/self/smaps lists them.
func vmFlags(t *testing.T, b []byte) []string {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	in := false
	for line := range strings.Lines(string(smaps)) {
		if strings.HasPrefix(line, start) {
			in = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return nil
}

// TestRegionHugePages: a table's region asks for transparent huge pages
// ("hg" in its VmFlags) by default and for none ("nh") after SmallPages,
// whatever the host's THP setting.
func TestRegionHugePages(t *testing.T) {
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
