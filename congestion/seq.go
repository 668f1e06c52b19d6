package congestion

// 31-bit circular sequence arithmetic (spec §1.6), the two operations the controllers need.
// Sequence numbers are masked to 31 bits first, so hostile 32-bit values cannot break them.

const (
	maxSeq    = 0x7FFFFFFF
	seqThresh = 0x40000000 // 2^30
)

// seqOffset returns the signed circular distance from a to b (UDT's seqoff): positive when b
// comes after a.
func seqOffset(a, b uint32) int64 {
	a &= maxSeq
	b &= maxSeq
	d := int64(b) - int64(a)
	switch {
	case d > -seqThresh && d < seqThresh:
		return d
	case a < b:
		return d - (maxSeq + 1)
	default:
		return d + (maxSeq + 1)
	}
}

// seqAfter reports whether a comes strictly after b (UDT's seqcmp(a, b) > 0).
func seqAfter(a, b uint32) bool { return seqOffset(b, a) > 0 }

// seqDec returns the sequence number before s.
func seqDec(s uint32) uint32 { return (s - 1) & maxSeq }
