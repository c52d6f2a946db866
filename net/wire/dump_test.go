package wire

import (
	"fmt"
	"strings"
)

// hexdump renders frames the way docs/PROTOCOL.md shows them: per frame a
// header line, then 16 bytes per line with offsets and ASCII.
func hexdump(frames [][]byte) string {
	var b strings.Builder
	for i, f := range frames {
		fmt.Fprintf(&b, "frame %d (%d bytes)\n", i, len(f))
		for off := 0; off < len(f); off += 16 {
			end := min(off+16, len(f))
			fmt.Fprintf(&b, "  %04x ", off)
			for j := off; j < off+16; j++ {
				if j < end {
					fmt.Fprintf(&b, " %02x", f[j])
				} else {
					b.WriteString("   ")
				}
			}
			b.WriteString("  |")
			for _, c := range f[off:end] {
				if c >= 0x20 && c < 0x7f {
					b.WriteByte(c)
				} else {
					b.WriteByte('.')
				}
			}
			b.WriteString("|\n")
		}
	}
	return b.String()
}
