package conn

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/udtgo/udt/internal/stream"
)

// Errors a Dial can end with, inside a *net.OpError (match with errors.Is, not with the text).
// Like package net's, these sentinels' text has no package prefix: the OpError around them
// names the network ("dial udt 192.0.2.1:9000: connection rejected by peer"). Other errors of
// the package do start with "udt: ": ErrMessageTooLarge, ErrStreamMode, ErrModeMismatch,
// *ShortBufferError, ErrUnacknowledged, and two a Dial can end with: "udt: connection refused:
// ..." (matches syscall.ECONNREFUSED) and "udt: connection rejected by peer: it is in message
// mode, ..." (matches ErrRejected and ErrModeMismatch).
var (
	// ErrRejected: the listener refused the connection (handshake request type 1002, spec §3.2):
	// its accept backlog is full, or the version or socket type differs.
	ErrRejected = errors.New("connection rejected by peer")

	// ErrHandshakeTimeout: no valid handshake answer within Config.HandshakeTimeout (UDT error
	// 1001). Its Timeout method reports true.
	ErrHandshakeTimeout error = &timeoutError{"handshake timed out"}

	// ErrBadHandshake: the listener's answer failed a check (its ISN differs from ours, UDT error
	// 1004, or a field is out of bounds).
	ErrBadHandshake = errors.New("invalid handshake response")

	// ErrPeerIdle: nothing was heard from the peer for Config.IdleTimeout; the connection is
	// broken. Errors that say so match it with errors.Is, say how long the peer was silent, and
	// report Timeout() true.
	ErrPeerIdle error = &timeoutError{"peer unresponsive, connection broken"}

	// ErrPeerShutdown: Write after the peer sent Shutdown (it will read no more).
	ErrPeerShutdown = errors.New("peer has shut the connection down")
)

// timeoutError is a net.Error whose Timeout reports true.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

var _ net.Error = (*timeoutError)(nil)

// peerIdleError is the dead-peer error (spec §4.5): nothing received for idle. refused: a
// port-unreachable report shortened the wait (icmp.go); the error then also matches
// syscall.ECONNREFUSED.
type peerIdleError struct {
	idle    time.Duration
	refused bool
}

func (e *peerIdleError) Error() string {
	why := ""
	if e.refused {
		why = " after its host reported port unreachable"
	}
	return fmt.Sprintf("peer unresponsive: nothing received for %v%s, connection broken", e.idle.Round(time.Millisecond), why)
}
func (e *peerIdleError) Timeout() bool        { return true }
func (e *peerIdleError) Temporary() bool      { return false }
func (e *peerIdleError) Is(target error) bool { return target == ErrPeerIdle }
func (e *peerIdleError) Unwrap() error {
	if e.refused {
		return syscall.ECONNREFUSED
	}
	return nil
}

// connError translates the engine's errors into this package's.
func connError(err error) error {
	var idle *stream.PeerIdleError
	if errors.As(err, &idle) {
		return &peerIdleError{idle.Idle, idle.Refused}
	}
	return err
}

// opError wraps err the way package net does. A nil err stays nil.
func opError(op string, local, remote net.Addr, err error) error {
	if err == nil {
		return nil
	}
	return &net.OpError{Op: op, Net: "udt", Source: local, Addr: remote, Err: err}
}
