// Package losslist holds the two loss lists of a UDT connection: the sender's
// list of sequence numbers to retransmit ([Sender]) and the receiver's list of
// sequence numbers still missing ([Receiver]).
//
// Both are wrap-aware on the 31-bit sequence circle (package seqno) and keep
// every entry inside a window of at most a configured number of packets, far
// below the 2^30 ordering limit (spec §1.6, §9.2). They are pure data
// structures: no goroutines, no clock reads (time is passed in), not safe for
// concurrent use, and allocation-free in steady state.
//
// References: UDT4 spec §2.4 (NAK), §4.3 (sender: loss list first), §4.4
// (receiver loss detection), §4.5 (go-back-N on EXP); UDT 4.11 list.cpp
// (CSndLossList, CRcvLossList) for the semantics, not the layout.
package losslist

import (
	"errors"

	"github.com/udtgo/udt/internal/seqno"
)

// Range is an inclusive range of sequence numbers First..Last in circular
// order; a single number has First == Last. It is the unit of a NAK entry
// (spec §2.4).
type Range struct {
	First, Last seqno.Seq
}

// Len returns the number of sequence numbers in r.
func (r Range) Len() int { return seqno.Len(r.First, r.Last) }

var (
	// ErrInverted is returned for a range whose First comes after its Last.
	ErrInverted = errors.New("losslist: range start after its end")
	// ErrWindow is returned for a range that reaches beyond the list's window.
	ErrWindow = errors.New("losslist: range outside the window")
)

// MaxWindow is the largest window a loss list accepts, 2^29 packets: well
// below the 2^30 limit of circular comparison.
const MaxWindow = 1 << 29
