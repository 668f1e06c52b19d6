package conn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/stream"
)

// Message mode (Config.MessageMode; UDT_DGRAM, socket type 2, spec §7.2).
//
// A message-mode *Conn is a net.Conn over messages, as a SOCK_SEQPACKET socket is: each Write is
// one message, delivered whole and in order, and each Read returns exactly one message. The
// message calls add what UDT's sendmsg adds: a time to live after which the sender gives the
// message up and tells the receiver (a message drop request, spec §2.6), and an in-order flag
// whose absence lets a complete message be read before earlier ones that are still being
// repaired. Unlike UDT 4.11, a Read whose buffer is too small for the next message fails with a
// *ShortBufferError naming the message's size and leaves the message queued (the reference
// returns the message cut short and drops the rest).

// Errors of the message calls, inside a *net.OpError (match with errors.Is or errors.As).
var (
	// ErrMessageTooLarge: the message is larger than Conn.MaxMessageSize (UDT error 5012).
	ErrMessageTooLarge = errors.New("udt: message too large")

	// ErrStreamMode: WriteMessage or ReadMessage on a stream connection (UDT error 5009); set
	// Config.MessageMode on both ends to carry messages.
	ErrStreamMode = errors.New("udt: message call on a stream connection (Config.MessageMode is off)")

	// ErrModeMismatch: the peer uses the other mode (stream vs. message, handshake socket type,
	// spec §2.1). A Dial or Rendezvous that fails this way also matches ErrRejected.
	ErrModeMismatch = errors.New("udt: peer uses the other socket type (stream vs. message mode)")
)

// ShortBufferError is the error of a ReadMessage (or message-mode Read) whose buffer is smaller
// than the next message. The message stays queued: read it again with a buffer of Size bytes. It
// matches io.ErrShortBuffer.
type ShortBufferError struct {
	Size   int // bytes of the next message
	Buffer int // bytes of the buffer passed
}

func (e *ShortBufferError) Error() string {
	return fmt.Sprintf("udt: the next message is %d bytes, the buffer only %d (the message stays queued)", e.Size, e.Buffer)
}

// Is reports whether target is io.ErrShortBuffer.
func (e *ShortBufferError) Is(target error) bool { return target == io.ErrShortBuffer }

// MessageStats counts a message-mode connection's messages (Stats.Messages).
type MessageStats struct {
	Written     uint64 // messages accepted by Write and WriteMessage
	Read        uint64 // messages returned by Read and ReadMessage
	Expired     uint64 // messages this side gave up after their TTL
	DropReqSent uint64 // message drop requests sent (control type 7, spec §2.6; repeats included)
	DropReqRecv uint64 // message drop requests received: messages the peer gave up
	Discarded   uint64 // packets received and discarded unread, their message given up or broken
}

// MaxMessageSize returns the largest message WriteMessage accepts now, in bytes: the send buffer
// or the peer's flow window from the handshake (its receive buffer must hold the whole message),
// whichever holds fewer packets, of the payload packets are cut at (Stats().PacketSize − 16). In
// message mode path MTU discovery does not probe (a message's packets keep their boundaries, so
// none can be lengthened into a probe), so packets stay at the base size, 1184 bytes of payload
// by default, and this limit can only fall, if an ICMP report lowers the path MTU. It is 0 on a
// stream connection.
func (c *Conn) MaxMessageSize() int {
	if !c.cfg.MessageMode {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ep.MaxMessage()
}

// WriteMessage sends b as one message (UDT sendmsg, spec §7.2): the receiver reads it whole and
// alone, or never. It blocks until the send buffer holds the whole message. ttl > 0 is the
// message's time to live from now: once it has passed, the sender gives the message up (it is
// no longer sent or retransmitted) and tells the receiver, which discards any part it holds;
// ttl ≤ 0 means no limit. inOrder delivers the message only after every earlier one; without
// it a complete message may be read before earlier ones still being repaired. An empty b sends
// nothing (UDT carries no empty message).
//
// The TTL runs from WriteMessage (from the moment the send buffer takes the message, if the call
// had to wait for room), not from the message's first transmission: it includes the time the
// message waits in the send buffer behind earlier ones. That buffer holds DefaultBufferPackets
// (32768) packets by default, about 47.7 MB at the default MSS, so with a short TTL and a deep
// queue messages expire before they leave: udtperf -message 64KiB -ttl 50ms on loopback gave up
// from none to about half of them on a lossless path, as far as the writer ran ahead of the link
// (the machine's speed decides). Size Config.SendBuffer to what the link sends within the TTL, or
// give a TTL that covers the queue.
//
// A message larger than 256 KiB is copied into the send buffer in 256 KiB steps, each under the
// connection's lock and the next after releasing it (the message's slots, sequence and message
// numbers are taken first): nothing of it is sent before its last byte is in, and a Close, a
// failure of the connection or the peer's Shutdown meanwhile drops it whole and fails the call.
// Once the buffer has room for the message, the write deadline no longer interrupts the copy.
//
// Errors, inside a *net.OpError: ErrMessageTooLarge
// (larger than MaxMessageSize), ErrStreamMode, os.ErrDeadlineExceeded (write deadline),
// ErrPeerShutdown, net.ErrClosed, or the connection's failure.
func (c *Conn) WriteMessage(b []byte, ttl time.Duration, inOrder bool) error {
	if !c.cfg.MessageMode {
		return c.opErr("write", ErrStreamMode)
	}
	_, err := c.writeMessage("write", b, ttl, inOrder)
	return err
}

// ReadMessage reads the next message into b and returns its length (UDT recvmsg, spec §7.2). It
// blocks until a message is complete. If b is shorter than the message it returns a
// *ShortBufferError with the message's size and the message stays queued; an empty b returns
// (0, nil) at once, as io.Reader's convention has it, without waiting or taking a message. At
// the peer's orderly close it returns a bare io.EOF once every message has been read. Other
// errors, inside a *net.OpError: ErrStreamMode, os.ErrDeadlineExceeded (read deadline),
// net.ErrClosed, or the connection's failure.
//
// A message larger than 256 KiB is copied out in 256 KiB steps, each under the connection's lock
// (the message stays whole and in place meanwhile, whatever arrives; concurrent ReadMessage calls
// wait for it and read the messages after it). A Close meanwhile fails the call with
// net.ErrClosed; neither the connection's failure nor the read deadline stops a copy under way.
func (c *Conn) ReadMessage(b []byte) (int, error) {
	if !c.cfg.MessageMode {
		return 0, c.opErr("read", ErrStreamMode)
	}
	return c.readMessage("read", b)
}

// writeMessage is WriteMessage (and message mode's Write). A message of up to lockChunk bytes is
// copied in one hold of c.mu; a larger one's slots are reserved in that hold, with its first
// lockChunk bytes, and the rest copied lockChunk bytes per hold (fillMessage), so that the
// socket's reader and pacer never wait behind a large message's copy.
func (c *Conn) writeMessage(op string, b []byte, ttl time.Duration, inOrder bool) (int, error) {
	if isClosed(c.closing) {
		return 0, c.opErr(op, net.ErrClosed)
	}
	select {
	case c.wsem <- struct{}{}:
	case <-c.wdl.done():
		return 0, c.opErr(op, os.ErrDeadlineExceeded)
	case <-c.closing:
		return 0, c.opErr(op, net.ErrClosed)
	}
	defer func() { <-c.wsem }()
	for {
		c.mu.Lock()
		err := c.stoppedLocked()
		if err == nil && isClosed(c.wdl.done()) {
			err = os.ErrDeadlineExceeded
		}
		if err != nil {
			c.mu.Unlock()
			return 0, c.opErr(op, err)
		}
		if len(b) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		ok, werr := c.ep.BeginMessage(time.Now(), len(b), ttl, inOrder)
		done := false
		if ok {
			_, done = c.ep.FillMessage(b[:min(len(b), lockChunk)])
		}
		var fx effects
		if done {
			fx = c.pullLocked(via{}) // the message, if due at once, leaves from here
		}
		max := c.ep.MaxMessage()
		c.unlock()
		switch {
		case done:
			c.apply(&fx)
			return len(b), nil
		case ok:
			return c.fillMessage(op, b)
		case errors.Is(werr, stream.ErrMessageTooLarge):
			return 0, c.opErr(op, fmt.Errorf("%w: %d bytes, at most %d (Config.SendBuffer and the peer's receive buffer)", ErrMessageTooLarge, len(b), max))
		case werr != nil:
			return 0, c.opErr(op, werr)
		}
		select {
		case <-c.writable:
		case <-c.wdl.done():
		case <-c.closing:
		case <-c.dead:
		}
	}
}

// fillMessage copies the rest of b, whose first lockChunk bytes are in, into the message
// BeginMessage reserved, lockChunk bytes per hold of c.mu; the message is sent once whole. Close,
// a break or the peer's Shutdown meanwhile drop it whole (nothing of it was sent) and fail the
// call. The write deadline is not checked: the copy does not wait.
func (c *Conn) fillMessage(op string, b []byte) (int, error) {
	for off := lockChunk; ; off += lockChunk {
		c.mu.Lock()
		err := c.stoppedLocked()
		n, done := 0, false
		if err == nil {
			n, done = c.ep.FillMessage(b[off:min(len(b), off+lockChunk)])
			if n == 0 { // the engine dropped it: it stopped sending (cannot happen unseen above)
				err = net.ErrClosed
			}
		}
		if err != nil {
			c.ep.AbortMessage()
		}
		var fx effects
		if done {
			fx = c.pullLocked(via{})
		}
		c.unlock()
		if err != nil {
			return 0, c.opErr(op, err)
		}
		if done {
			c.apply(&fx)
			return len(b), nil
		}
	}
}

// stoppedLocked returns why the connection takes no more messages, nil if it does: Close, its
// failure, the peer's Shutdown. Caller holds c.mu.
func (c *Conn) stoppedLocked() error {
	switch {
	case c.closed:
		return net.ErrClosed
	case c.deadErr != nil:
		return c.deadErr
	case c.ep.PeerClosed():
		return ErrPeerShutdown
	}
	return nil
}

// readMessage is ReadMessage (and message mode's Read). A message of up to lockChunk bytes is
// copied in one hold of c.mu; a larger one is pinned in the receive buffer and copied lockChunk
// bytes per hold (readPinned). Meanwhile other readers wait for it (c.readPin): they read the
// messages after it.
func (c *Conn) readMessage(op string, b []byte) (int, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, c.opErr(op, net.ErrClosed)
		}
		if isClosed(c.rdl.done()) {
			c.mu.Unlock()
			return 0, c.opErr(op, os.ErrDeadlineExceeded)
		}
		if len(b) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		if pin := c.readPin; pin != nil {
			c.mu.Unlock()
			select {
			case <-pin:
			case <-c.rdl.done():
			case <-c.closing:
			}
			continue
		}
		if size := c.ep.NextMessage(); size > lockChunk && len(b) >= size {
			// The pinned message's own size decides: were it ever another than the one
			// NextMessage saw, the copy below would end early and fail a live connection.
			if size = c.ep.PinMessage(); size > lockChunk && len(b) >= size {
				c.readPin = make(chan struct{})
				n, _ := c.ep.ReadPinned(b[:lockChunk])
				c.unlock()
				return c.readPinned(op, b[:size], n)
			}
			if size > 0 {
				c.ep.UnpinMessage()
			}
		}
		n, size, err := c.ep.ReadMessage(b)
		var fx effects
		pulled := n > 0 || err != nil
		if pulled {
			fx = c.pullLocked(via{}) // a window update may be queued
		}
		dead := c.deadErr
		c.unlock()
		if pulled {
			c.apply(&fx)
		}
		switch {
		case n > 0:
			return n, nil
		case size > 0:
			return 0, c.opErr(op, &ShortBufferError{Size: size, Buffer: len(b)})
		case err == io.EOF:
			return 0, io.EOF
		case err != nil:
			return 0, c.opErr(op, connError(err))
		case dead != nil:
			return 0, c.opErr(op, dead)
		}
		select {
		case <-c.readable:
		case <-c.rdl.done():
		case <-c.closing:
		case <-c.dead:
		}
	}
}

// readPinned copies the rest of the pinned message, len(b) bytes of which the first n are in b,
// lockChunk bytes per hold of c.mu, and ends the pin. Close meanwhile leaves the message queued
// and fails the call; the connection's failure does not stop it (the message is complete and
// readable, as it would be by a read a moment earlier), nor does the read deadline (the copy
// does not wait).
func (c *Conn) readPinned(op string, b []byte, n int) (int, error) {
	for {
		c.mu.Lock()
		k, done := 0, false
		if !c.closed {
			k, done = c.ep.ReadPinned(b[n:min(len(b), n+lockChunk)])
			n += k
		}
		if k == 0 && !done { // closed (the pin cannot go otherwise)
			c.ep.UnpinMessage()
			close(c.readPin)
			c.readPin = nil
			c.mu.Unlock()
			return 0, c.opErr(op, net.ErrClosed)
		}
		var fx effects
		if done {
			fx = c.pullLocked(via{}) // a window update may be queued
			close(c.readPin)
			c.readPin = nil
		}
		c.unlock()
		if done {
			c.apply(&fx)
			return n, nil
		}
	}
}

// rejection is the error of a handshake answered with type 1002 (spec §3.2 steps 5–6). Our
// listener (and rendezvous peer) puts its own socket type into the rejection when the types
// differ; the reference echoes ours, so its reason stays unknown.
func rejection(hs *packet.Handshake, cfg *Config) error {
	if t := hs.SocketType; (t == packet.SocketStream || t == packet.SocketDgram) && t != cfg.socketType() {
		return &modeMismatchError{peer: t, local: cfg.socketType()}
	}
	return fmt.Errorf("%w (its accept backlog is full, or its UDT version or socket type differs)", ErrRejected)
}

// modeMismatchError is a refusal for the other socket type; it matches ErrRejected and
// ErrModeMismatch.
type modeMismatchError struct{ peer, local packet.SocketType }

func (e *modeMismatchError) Error() string {
	return fmt.Sprintf("udt: connection rejected by peer: it is in %s mode, this side in %s mode (Config.MessageMode must match)",
		modeName(e.peer), modeName(e.local))
}

func (e *modeMismatchError) Is(target error) bool {
	return target == ErrRejected || target == ErrModeMismatch
}

func modeName(t packet.SocketType) string {
	if t == packet.SocketDgram {
		return "message"
	}
	return "stream"
}
