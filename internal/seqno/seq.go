// Package seqno implements UDT4's circular sequence-number arithmetic: 31-bit
// packet sequence numbers ([Seq]) and 29-bit message numbers ([Msg]).
//
// The rules are those of the UDT 4.11 reference (common.h: CSeqNo, CMsgNo),
// described in the UDT4 spec §1.6 and §9.2. Numbers live on a circle; two
// numbers can be ordered only if they are less than half the circle apart
// (2^30 for packets, 2^28 for messages). Every window built on these numbers
// (flow window, buffers, loss lists) must therefore stay far below 2^30
// packets.
//
// All functions are pure, allocation-free and safe for concurrent use.
package seqno

import "fmt"

// Seq is a 31-bit UDT packet sequence number, in [0, MaxSeq]. After MaxSeq
// comes 0 (spec §1.2). The zero value is the valid sequence number 0.
type Seq uint32

const (
	// MaxSeq is the largest packet sequence number, 2^31−1 (spec §1.6).
	MaxSeq Seq = 0x7FFFFFFF
	// SeqThreshold is the comparison threshold, 2^30: numbers less than this
	// far apart are ordered by their circular distance (spec §1.6).
	SeqThreshold = 0x3FFFFFFF + 1
	// seqMod is the size of the circle, 2^31.
	seqMod = int64(MaxSeq) + 1
)

// SeqFromWire extracts the sequence number from a data-packet header word 0
// (or any 32-bit field carrying one) by masking off bit 31, the data/control
// flag (spec §1.5). It never fails: every masked value is a valid Seq.
func SeqFromWire(w uint32) Seq { return Seq(w & uint32(MaxSeq)) }

// ParseSeq validates a 32-bit value that must already be a sequence number
// (bit 31 clear), such as a handshake's ISN field. It returns an error for
// values above MaxSeq; hostile input never panics.
func ParseSeq(v uint32) (Seq, error) {
	if v > uint32(MaxSeq) {
		return 0, fmt.Errorf("seqno: sequence number %#x exceeds 31 bits", v)
	}
	return Seq(v), nil
}

// Valid reports whether s is within [0, MaxSeq].
func (s Seq) Valid() bool { return s <= MaxSeq }

// Inc returns the sequence number after s (UDT's incseq): MaxSeq.Inc() == 0.
func (s Seq) Inc() Seq { return (s + 1) & MaxSeq }

// Dec returns the sequence number before s (UDT's decseq): Seq(0).Dec() == MaxSeq.
func (s Seq) Dec() Seq { return (s - 1) & MaxSeq }

// Add returns s advanced by n positions on the circle; n may be negative.
// It equals UDT's incseq(s, n) for 0 ≤ n ≤ MaxSeq.
func (s Seq) Add(n int) Seq { return Seq(uint32(int64(s)+int64(n)) & uint32(MaxSeq)) }

// Offset returns the signed circular distance from a to b (UDT's seqoff):
// the n with a.Add(n) == b and −2^30 ≤ n ≤ 2^30. Positive means b comes after
// a. At exactly 2^30 apart the reference's tie-break is kept: Offset(a, b) is
// −2^30 when a < b numerically and +2^30 otherwise, so Offset(a, b) ==
// −Offset(b, a) always holds.
func Offset(a, b Seq) int {
	d := int64(b) - int64(a)
	switch {
	case d > -SeqThreshold && d < SeqThreshold:
		return int(d)
	case a < b:
		return int(d - seqMod)
	default:
		return int(d + seqMod)
	}
}

// Cmp compares a and b on the circle (the sign of UDT's seqcmp): −1 if a
// comes before b, 0 if equal, +1 if a comes after b. It is consistent with
// Offset: Cmp(a, b) == −sign(Offset(a, b)).
func Cmp(a, b Seq) int {
	switch o := Offset(a, b); {
	case o > 0:
		return -1
	case o < 0:
		return 1
	}
	return 0
}

// Less reports whether a comes before b on the circle.
func (a Seq) Less(b Seq) bool { return Offset(a, b) > 0 }

// LessEq reports whether a comes before b or equals it.
func (a Seq) LessEq(b Seq) bool { return Offset(a, b) >= 0 }

// Len returns the number of sequence numbers in the inclusive range a..b,
// walking forward from a (UDT's seqlen): Len(a, a) == 1, Len(MaxSeq, 0) == 2.
// The result is in [1, 2^31]; callers use it only for ranges they built with
// a ≤ b in circular order. (On 32-bit platforms the one full-circle case,
// 2^31, does not fit in an int; no window comes near it.)
func Len(a, b Seq) int {
	if a <= b {
		return int(b) - int(a) + 1
	}
	return int(int64(b) - int64(a) + seqMod + 1)
}

// Max returns whichever of a and b comes later on the circle.
func Max(a, b Seq) Seq {
	if a.Less(b) {
		return b
	}
	return a
}

// Min returns whichever of a and b comes earlier on the circle.
func Min(a, b Seq) Seq {
	if a.Less(b) {
		return a
	}
	return b
}

// String formats s as a decimal number.
func (s Seq) String() string { return fmt.Sprint(uint32(s)) }
