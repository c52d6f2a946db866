package zsock

import "testing"

// With glibc both allocator settings take (each mallopt returns 1).
func TestMallocTuned(t *testing.T) {
	switch mallocTuned {
	case 2:
	case -1:
		t.Skip("not glibc: the allocator is left as it is")
	default:
		t.Fatalf("glibc took %d of the 2 allocator settings, want both", mallocTuned)
	}
}
