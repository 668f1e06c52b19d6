package seqno

import "fmt"

// Msg is a 29-bit UDT message number, in [0, MaxMsg] (spec §1.2, §1.6). A
// sender numbers messages from 1 and never uses 0; see [Msg.Next].
type Msg uint32

const (
	// MaxMsg is the largest value of the 29-bit message-number field, 2^29−1.
	MaxMsg Msg = 0x1FFFFFFF
	// MsgThreshold is the comparison threshold for message numbers, 2^28.
	MsgThreshold = 0x0FFFFFFF + 1
	// FirstMsg is the first message number a sender uses (spec §1.2).
	FirstMsg Msg = 1
	msgMod       = int64(MaxMsg) + 1
)

// MsgFromWire extracts the message number from data-header word 1 by masking
// off the FF and O bits (spec §1.5). It never fails.
func MsgFromWire(w uint32) Msg { return Msg(w & uint32(MaxMsg)) }

// Valid reports whether m fits in 29 bits.
func (m Msg) Valid() bool { return m <= MaxMsg }

// Next returns the message number a sender uses after m. As in the reference
// sender (CSndBuffer::addBuffer), numbers run 1, 2, …, MaxMsg−1 and then wrap
// back to 1: neither 0 nor MaxMsg is ever produced.
func (m Msg) Next() Msg {
	n := (m + 1) & MaxMsg
	if n == MaxMsg || n == 0 {
		return FirstMsg
	}
	return n
}

// Add returns m advanced by n positions on the full 29-bit circle (CMsgNo's
// modular arithmetic, without the sender's skip of 0 and MaxMsg); n may be
// negative.
func (m Msg) Add(n int) Msg { return Msg(uint32(int64(m)+int64(n)) & uint32(MaxMsg)) }

// MsgOffset returns the signed circular distance from a to b on the 29-bit
// circle, in [−2^28, 2^28], with the same tie-break as [Offset].
func MsgOffset(a, b Msg) int {
	d := int64(b) - int64(a)
	switch {
	case d > -MsgThreshold && d < MsgThreshold:
		return int(d)
	case a < b:
		return int(d - msgMod)
	default:
		return int(d + msgMod)
	}
}

// MsgCmp compares message numbers on the circle: −1 if a comes before b, 0 if
// equal, +1 if after (the sign of UDT's CMsgNo::msgcmp).
func MsgCmp(a, b Msg) int {
	switch o := MsgOffset(a, b); {
	case o > 0:
		return -1
	case o < 0:
		return 1
	}
	return 0
}

// Less reports whether a comes before b on the circle.
func (a Msg) Less(b Msg) bool { return MsgOffset(a, b) > 0 }

// String formats m as a decimal number.
func (m Msg) String() string { return fmt.Sprint(uint32(m)) }
