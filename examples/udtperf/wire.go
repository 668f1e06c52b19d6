package main

// udtperf's own protocol, the same over udt, tcp and quic (one byte stream per transfer):
//
//	client → server  "udtperf1" hello            (magic, then a message)
//	server → client  welcome                     (Error set: refused, e.g. the file exists;
//	                                              Offset set: the server can resume a file upload)
//	client → server  start                       (only after a welcome with Offset: where the data begins)
//	sender → receiver  frame* end trailer        (frame = u32 n + n bytes, 1 ≤ n ≤ 1 MiB; end = u32 0)
//	receiver → sender  progress*                 (with hello.Progress and welcome.Progress: bytes received
//	                                              so far, every progressEvery while data flows)
//	receiver → sender  report                    (bytes, SHA-256, CPU; Error set: failed, e.g. disk full —
//	                                              may arrive early, the sender then stops)
//	sender → receiver  report                    (bytes, SHA-256, CPU, elapsed, transport statistics)
//	receiver closes; the sender closes once it sees that (or after a grace period).
//
// A message is a u32 big-endian length (at most 64 KiB) and a JSON object. The sender is the
// client unless the hello asks for reverse mode. Everything read from the peer is bounded and
// validated; a violation ends the transfer with a "protocol error".

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	magic     = "udtperf1"
	maxMsg    = 64 << 10  // bytes of one JSON message
	frameSize = 128 << 10 // payload bytes per data frame we send
	maxFrame  = 1 << 20   // largest data frame we accept
)

// Transfer modes in the hello.
const (
	modeSend    = "send"    // client sends generated data
	modeReverse = "reverse" // server sends generated data
	modeFile    = "file"    // client sends a file, the server stores it
)

// hello opens every transfer.
type hello struct {
	Proto  string `json:"proto"`             // udt, tcp or quic: must match what the server accepted on
	Mode   string `json:"mode"`              // send, reverse or file
	Bytes  int64  `json:"bytes,omitempty"`   // stop after this many bytes (file mode: the file's size)
	TimeNs int64  `json:"time_ns,omitempty"` // or after this long
	Name   string `json:"name,omitempty"`    // file mode: base name to store under
	// Progress: the client speaks progress messages (both as sender and as receiver). Older
	// servers ignore it and never set welcome.Progress.
	Progress bool `json:"progress,omitempty"`
	// Resume (file mode): continue an earlier upload of Name that broke off, if the server
	// holds part of it (welcome.Offset).
	Resume bool `json:"resume,omitempty"`
}

func (h *hello) validate() error {
	switch h.Mode {
	case modeSend, modeReverse:
	case modeFile:
		if h.Bytes < 0 {
			return errors.New("file size is negative")
		}
		return nil
	default:
		return fmt.Errorf("unknown mode %q", h.Mode)
	}
	if (h.Bytes > 0) == (h.TimeNs > 0) {
		return errors.New("want exactly one of bytes and time")
	}
	if h.Bytes < 0 || h.Bytes > maxTransferBytes || h.TimeNs < 0 || h.TimeNs > int64(maxTransferTime) {
		return errors.New("bytes or time out of range")
	}
	return nil
}

// welcome answers the hello.
type welcome struct {
	Error    string `json:"error,omitempty"`
	Progress bool   `json:"progress,omitempty"` // the server speaks progress messages too
	// Offset > 0 (file mode with hello.Resume): the server holds the first Offset bytes of an
	// earlier upload of the file, whose SHA-256 is PrefixSHA256; the client answers with start.
	Offset       int64  `json:"offset,omitempty"`
	PrefixSHA256 string `json:"prefix_sha256,omitempty"`
}

// start answers a welcome with an Offset: the client continues at Offset (its file begins with
// the same bytes) or starts over at 0. The data frames then carry the file from there; both
// ends' digests cover the whole file.
type start struct {
	Offset int64 `json:"offset"`
}

// hashTime is how long hashing n bytes may take, at a conservative 100 MB/s (a slow disk).
func hashTime(n int64) time.Duration { return time.Duration(n/100e6+1) * time.Second }

// progress is the receiver's running count, so that the sender's interval lines and progress
// bar count delivered bytes, not bytes handed to its transport (whose buffers hold megabytes).
type progress struct {
	Received int64 `json:"received"` // payload bytes the receiver has read so far
}

// progressEvery is how often a receiver reports progress while data flows: the sender's
// counts lag the receiver's by at most this plus the one-way delay.
const progressEvery = 20 * time.Millisecond

// receiverMsg is any message from the receiver: a progress message (Received set) or the report.
type receiverMsg struct {
	report
	Received *int64 `json:"received"`
}

// trailer follows the end frame.
type trailer struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// report is one end's half of a result row; both ends send theirs, so both can print the row.
type report struct {
	Error     string   `json:"error,omitempty"`
	Bytes     int64    `json:"bytes"`
	SHA256    string   `json:"sha256"`
	CPUNs     int64    `json:"cpu_ns"` // process CPU time during the transfer; −1 unknown
	ElapsedNs int64    `json:"elapsed_ns"`
	Protocol  string   `json:"protocol,omitempty"`
	Backend   string   `json:"backend,omitempty"`
	CC        string   `json:"cc,omitempty"`
	Strict    bool     `json:"strict,omitempty"`
	Retrans   *float64 `json:"retrans_pct,omitempty"`
	RTTms     *float64 `json:"rtt_ms,omitempty"`
	PerWake   *float64 `json:"pkts_per_wake,omitempty"`
}

// writeMsg sends v as one length-prefixed JSON message in a single Write.
func writeMsg(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxMsg {
		return fmt.Errorf("message of %d bytes too long", len(b))
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// protocolError is a peer that does not speak udtperf's protocol correctly.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "protocol error: " + e.msg }

// readMsg reads one message into v.
func readMsg(r *bufio.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > maxMsg {
		return &protocolError{fmt.Sprintf("message length %d", n)}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &protocolError{fmt.Sprintf("bad message: %v", err)}
	}
	return nil
}

// writeHello sends the magic and the hello.
func writeHello(w io.Writer, h *hello) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(magic)+4+len(b))
	buf = append(buf, magic...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	buf = append(buf, b...)
	_, err = w.Write(buf)
	return err
}

// readHello reads and checks the magic and the hello.
func readHello(r *bufio.Reader, h *hello) error {
	var m [len(magic)]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return err
	}
	if string(m[:]) != magic {
		return &protocolError{"not a udtperf client (bad magic)"}
	}
	if err := readMsg(r, h); err != nil {
		return err
	}
	return h.validate()
}

// readFrameHeader returns the next data frame's length; 0 is the end marker.
func readFrameHeader(r *bufio.Reader) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return 0, &protocolError{fmt.Sprintf("data frame of %d bytes", n)}
	}
	return int(n), nil
}

// deadliner is what linger needs of a connection.
type deadliner interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

// drain reads and discards until the peer closes, an error, or d passes. It lets a message we
// just wrote reach the peer before we close (closing a TCP socket with unread input resets it).
func drain(c deadliner, r *bufio.Reader, d time.Duration) {
	c.SetReadDeadline(time.Now().Add(d))
	io.Copy(io.Discard, r)
}
