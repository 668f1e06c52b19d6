// Package buffer holds a UDT connection's send and receive buffers: the
// bounded queue of application bytes cut into packets that wait to be sent
// and acknowledged ([SendBuffer]), and the window of packet slots where
// arriving data waits to be read in order ([RecvBuffer]).
//
// Both are rings of fixed-size slots, one per packet, indexed by sequence
// number (wrap-aware, package seqno). Slot memory comes in pages from a
// process-wide pool and is held only while a slot in the page is in use (see
// [PageSize]), so configured capacity costs nothing until used and steady
// state does not allocate. Each slot's length is kept on its page beside it,
// so the fixed cost of a buffer is its page table: about 10 bytes per 64 KiB
// of capacity, plus a bit per slot for the receive buffer. Call Release when the connection ends to hand the
// pages back.
//
// They are pure data structures: no goroutines, no clock, not safe for
// concurrent use; blocking (flow control) is the caller's job.
//
// References: UDT4 spec §1.1 (payload = MSS − 28 − 16), §2.3 (ACK number,
// available buffer in packets), §4.3–4.4 (sender and receiver), §7.1
// (buffer sizes), §7.3 (stream mode).
package buffer

import "errors"

// HeaderOverhead is what a packet adds to its payload: 20 bytes of IPv4, 8 of
// UDP (UDT counts 28 even over IPv6) and UDT's 16-byte header (spec §1.1).
const HeaderOverhead = 28 + 16

// PayloadSize returns the data payload of one packet for an MSS in bytes:
// MSS − 44, i.e. 1456 for the default MSS of 1500 (spec §1.1).
func PayloadSize(mss int) int { return mss - HeaderOverhead }

// Errors returned by the buffers. Every one of them leaves the buffer
// unchanged.
var (
	// ErrAckBeyondSent: an ACK acknowledges packets that were never sent.
	ErrAckBeyondSent = errors.New("buffer: acknowledgement beyond the last packet sent")
	// ErrDuplicate: the packet is already in the receive buffer.
	ErrDuplicate = errors.New("buffer: duplicate packet")
	// ErrTooOld: the packet precedes the read point; it was delivered already.
	ErrTooOld = errors.New("buffer: packet already delivered")
	// ErrBeyondWindow: the packet lies beyond the receive buffer's capacity
	// (spec §4.4 step 4: dropped without a NAK).
	ErrBeyondWindow = errors.New("buffer: packet beyond the receive window")
	// ErrLength: the payload is empty or longer than the payload size.
	ErrLength = errors.New("buffer: bad payload length")
)
