// Package conn is udt's connection layer: a UDT4-compatible reliable byte stream over UDP with
// Go's net.Conn and net.Listener semantics.
//
//	ln, err := conn.Listen("udp", ":9000", nil)   // a *Listener; Accept returns *Conn as net.Conn
//	c, err := conn.Dial("udp", "host:9000", nil)  // a *Conn
//	c, err := conn.Rendezvous(ctx, "udp", ":9000", "peer:9000", nil) // both peers connect, no listener
//
// Config.MessageMode carries messages instead of a stream (UDT_DGRAM, spec §7.2): Conn.WriteMessage
// with a time to live and an in-order flag, Conn.ReadMessage one whole message per call
// (message.go). Rendezvous connection setup (spec §3.3) is in rendezvous.go.
//
// On the wire it speaks UDT 4.11 (docs/udt4-spec.md in the repository): the client/server
// handshake of spec §3.2 with a SYN cookie, data packets paced by a congestion controller
// (package congestion), full ACKs every SYN (10 ms), light ACKs every 64 packets, ACK2, NAKs, the
// EXP timer with keep-alives, and Shutdown. Where the reference has known weaknesses (spec §8–9) this
// package does better, and each place says so: a keyed-MAC cookie that correctly accepts the
// previous period, socket IDs and ISNs from crypto/rand, bounds-checked handshake fields, a
// replayed handshake that never makes a connection, forged ACKs and NAKs ignored instead of
// fatal, loss detection that waits out reordering (package internal/stream, after RFC 8985) and
// probes a silent path with backed-off two-packet probes instead of re-sending the flight,
// periodic NAK re-reports, and a Shutdown that is repeated while the peer keeps talking.
// Conn.Stats and Listener.Stats count what happened, the kernel's receive-buffer drops included.
//
// Goroutines. Each UDP socket (a multiplexer) has three: a reader that dispatches datagrams by
// destination socket ID, a pacer that releases data packets at the times the connections'
// congestion controllers allow (package pacer, backend chosen by Config.Pacer), and a timer
// goroutine that runs the timers (ACK, NAK, retransmission, keep-alive, linger) of connections
// whose runtime timer fired; each connection arms its own timer exactly after every call. Data
// that is due at once leaves from the goroutine whose call made it due (Write, the reader after
// an ACK), without waking the pacer. Everything ends when the last Listener or Conn on the
// socket is over: a closed Conn still delivers what was written (see Conn.Close). A Listener and
// all the connections it accepts share one socket.
//
// Errors follow package net: every error from a Conn or Listener method is a *net.OpError; a
// deadline gives an OpError whose Err is os.ErrDeadlineExceeded (Timeout() reports true); use after
// Close gives net.ErrClosed; a peer's orderly close reads as a bare io.EOF once all its data has
// been read. A peer whose close gave up with data undelivered (its Config.Linger passed or was
// negative; UDT_LINGER for a UDT4 peer) reads, in stream mode, as an error matching
// io.ErrUnexpectedEOF when data after the hole had arrived; a lost tail with nothing after it
// cannot be told from the end here, only by the writer's CloseContext.
package conn
