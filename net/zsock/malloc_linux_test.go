package zsock

import (
	"os"
	"testing"
)

// With glibc both allocator settings take (each mallopt returns 1), unless
// the environment already tunes the allocator.
func TestTuneAllocator(t *testing.T) {
	if operatorTuned() {
		if n := TuneAllocator(); n != 0 {
			t.Fatalf("the environment tunes the allocator, yet %d settings were changed", n)
		}
		return
	}
	switch n := TuneAllocator(); n {
	case 2:
	case -1:
		t.Skip("not glibc: the allocator is left as it is")
	default:
		t.Fatalf("glibc took %d of the 2 allocator settings, want both", n)
	}
}

// An operator's allocator settings in the environment are left alone.
func TestOperatorTuned(t *testing.T) {
	for _, c := range []struct {
		env, val string
		want     bool
	}{
		{"MALLOC_TRIM_THRESHOLD_", "131072", true},
		{"MALLOC_MMAP_THRESHOLD_", "0", true},
		{"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1", true},
		{"GLIBC_TUNABLES", "glibc.pthread.rseq=0", false},
	} {
		t.Run(c.env+"="+c.val, func(t *testing.T) {
			for _, v := range []string{"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"} {
				t.Setenv(v, "") // restored when the test ends
				os.Unsetenv(v)
			}
			t.Setenv(c.env, c.val)
			if got := operatorTuned(); got != c.want {
				t.Fatalf("operatorTuned() = %v, want %v", got, c.want)
			}
		})
	}
}
