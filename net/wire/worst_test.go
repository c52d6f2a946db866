package wire

import "testing"

// BenchmarkDecodeWorstCase decodes the most expensive kind of body found so
// far: a full-size JOB whose every job carries 64 one-byte headers (the
// duplicate check is the costliest per byte). It bounds what one hostile
// message can cost the server.
func BenchmarkDecodeWorstCase(b *testing.B) {
	hdrs := body{}.u16(MaxHeaders)
	for i := range MaxHeaders {
		hdrs = hdrs.str(string(rune('A'+i%26)) + string(rune('a'+i/26))).str("")
	}
	one := body{}.u64(1).u32(1).key("", "", "u").append(hdrs).blob(nil)
	n := min(MaxBatch, MaxBody/len(one))
	bd := body{}.u32(uint32(n))
	for range n {
		bd = bd.append(one)
	}
	frames := msg("JOB", bd)
	if _, err := Decode(frames); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bd)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frames); err != nil {
			b.Fatal(err)
		}
	}
}
