package stream

import "github.com/udtgo/udt/internal/seqno"

// 31-bit circular sequence arithmetic (spec §1.6). The engine keeps sequence numbers as uint32 and
// uses these small helpers on its hot paths; they agree with package seqno (seq_test.go checks).

const maxSeq = uint32(seqno.MaxSeq)

// seqOff is the signed distance from a to b (b − a), valid within ±2^30.
func seqOff(a, b uint32) int32 { return int32((b-a)<<1) >> 1 }

// seqAdd returns a + n modulo 2^31.
func seqAdd(a uint32, n int32) uint32 { return (a + uint32(n)) & maxSeq }

// seqInc returns a + 1 modulo 2^31.
func seqInc(a uint32) uint32 { return (a + 1) & maxSeq }

// seqDec returns a − 1 modulo 2^31.
func seqDec(a uint32) uint32 { return (a - 1) & maxSeq }

func seqnoOf(s uint32) seqno.Seq { return seqno.Seq(s & maxSeq) }
