package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/udtgo/udt/internal/stream"
)

// ErrUnacknowledged: CloseContext's close ended with data the peer never acknowledged. The error
// wraps the cause too: ErrPeerShutdown, the connection's error (ErrPeerIdle, a socket error), or,
// when Config.Linger passed first (or was negative), an unexported error that says so in its
// text: an ErrUnacknowledged that matches none of the others is the linger's.
var ErrUnacknowledged = errors.New("udt: connection closed with data unacknowledged")

// errLingerPassed is the cause of ErrUnacknowledged when Config.Linger passed first.
var errLingerPassed = errors.New("Config.Linger passed first")

// lingerError is errLingerPassed with the linger it was.
type lingerError struct{ linger time.Duration }

func (e lingerError) Error() string {
	if e.linger < 0 {
		return fmt.Sprintf("Config.Linger is negative (%v): Shutdown went at once, without waiting for acknowledgements", e.linger)
	}
	return fmt.Sprintf("Config.Linger (%v) passed first", e.linger)
}

func (e lingerError) Is(target error) bool { return target == errLingerPassed }

// Close closes the connection and returns at once, as a TCP close does. Blocked Read and Write
// calls return net.ErrClosed. The socket's goroutines go on delivering what was written,
// retransmitting as needed, until the peer has acknowledged all of it or Config.Linger has
// passed (with a negative Linger: not at all); then they send Shutdown (spec §3.4), re-sent
// until the peer answers (at most 9 times, max(2·RTT, 20 ms) apart: ≈ 0.2 s on a LAN, 1.8 s on a
// connection that exchanged no data and so measured no RTT; a UDT 4.11 peer never answers),
// and forget the connection. Close is idempotent, safe for concurrent use and returns nil.
//
// What Close does not guarantee: delivery. It returns before the data has arrived, and the
// delivery runs in this process, not in the kernel as TCP's does: if the process exits (main
// returns, os.Exit, a crash) first, whatever the peer has not acknowledged is lost and the peer
// gets no Shutdown (its reads fail after its idle timeout instead of reading io.EOF); the same
// happens if the socket given to DialPacketContext or NewListener is closed first. To know that
// the data arrived, use CloseContext, and exit or close the socket after it returns.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.ep.Close(time.Now(), c.cfg.Linger)
		fx := c.pullLocked(via{}) // a Shutdown, if nothing is left to deliver
		c.mu.Unlock()
		close(c.closing)
		c.apply(&fx)
	})
	return nil
}

// CloseContext closes the connection as Close does and waits until it is over: everything written
// acknowledged (or not), Shutdown sent and answered (or re-sent in vain, ≈ 0.2 s against a UDT
// 4.11 peer on a LAN, see Close), the connection forgotten, so that the process may exit or close
// a socket given to DialPacketContext or NewListener. It returns nil if the peer acknowledged
// everything written; an error matching ErrUnacknowledged (errors.Is) if the close ended with data
// unacknowledged, because Config.Linger passed (at once with a negative Linger), the peer shut
// down first (ErrPeerShutdown) or the connection broke (ErrPeerIdle, a socket error), saying how
// many bytes; or ctx's error if ctx ends first, while the delivery goes on in the background as
// after Close. Errors come inside a *net.OpError. Once a call has seen the close end, later calls
// return the same outcome; a call that returned ctx's error saw no outcome, and a later call waits
// again.
//
// Acknowledged means that the peer's UDT stack holds the bytes in its receive buffer (spec §2.3:
// an ACK names the first packet not received), not that its application has read them: if the
// peer's process exits or its application closes without reading, they are lost. A protocol
// that needs to know its data was processed must have the peer answer.
func (c *Conn) CloseContext(ctx context.Context) error {
	checkContext(ctx)
	c.Close()
	select {
	case <-c.finished:
	case <-ctx.Done():
		select {
		case <-c.finished: // both ready: the outcome wins
		default:
			return c.opErr("close", ctx.Err())
		}
	}
	c.mu.Lock()
	err := c.closeErr
	c.mu.Unlock()
	return c.opErr("close", err)
}

// closeOutcome is CloseContext's error for a close that settled with unacked bytes
// unacknowledged for reason why (nil when none); err is the engine's error, if it broke.
func closeOutcome(unacked int, why stream.CloseReason, err error, linger time.Duration) error {
	if unacked == 0 {
		return nil
	}
	var cause error
	switch why {
	case stream.ClosePeer:
		cause = ErrPeerShutdown
	case stream.CloseBroken:
		cause = connError(err)
	default:
		cause = lingerError{linger}
	}
	return fmt.Errorf("%w: %d bytes: %w", ErrUnacknowledged, unacked, cause)
}

// finish forgets a connection whose engine is Done (closed, Shutdown answered or given up):
// unregisters it, stops its flow and timer and releases its mux reference. apply runs it on a
// goroutine of its own, never on the reader, which the last release of a socket waits for.
func (c *Conn) finish() {
	c.finishOnce.Do(func() {
		c.mu.Lock()
		broken := c.ep.Err() != nil
		c.observeDrops(time.Now(), true)
		c.breakLocked(net.ErrClosed)
		c.mu.Unlock()
		c.dataH.Remove()
		c.disarm()
		c.rdl.stop()
		c.wdl.stop()
		c.mux.unregister(c)
		if c.onClose != nil {
			c.onClose()
		}
		if !broken {
			c.mux.bury(c.id, tomb{peer: c.peer, peerID: c.peerID, expires: time.Now().Add(tombLife)})
		}
		c.mux.release()
		c.obs.close()
		close(c.finished)
	})
}
