package congestion

import "github.com/udtgo/udt/internal/seqno"

// The 31-bit circular sequence arithmetic the controllers need (spec §1.6), on the uint32s of the
// Controller interface. Values are masked to 31 bits first, so hostile 32-bit numbers cannot
// break it.

const maxSeq = uint32(seqno.MaxSeq)

// seqOffset returns the signed circular distance from a to b (UDT's seqoff): positive when b
// comes after a.
func seqOffset(a, b uint32) int64 {
	return int64(seqno.Offset(seqno.SeqFromWire(a), seqno.SeqFromWire(b)))
}

// seqAfter reports whether a comes strictly after b (UDT's seqcmp(a, b) > 0).
func seqAfter(a, b uint32) bool { return seqOffset(b, a) > 0 }

// seqDec returns the sequence number before s.
func seqDec(s uint32) uint32 { return uint32(seqno.SeqFromWire(s).Dec()) }
