package conn

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/pacer"
)

// Defaults of Config's fields. They follow UDT 4.11 (spec §7.1) unless noted.
const (
	DefaultMSS              = 1500            // bytes, IP and UDP headers included (UDT_MSS)
	DefaultFlowWindow       = 25600           // packets (UDT_FC)
	DefaultBufferPackets    = 32768           // send and receive buffers, in packets of MSS−44 bytes (see Config.SendBuffer)
	DefaultHandshakeTimeout = 3 * time.Second // spec §3.2: requests re-sent every 250 ms for 3 s
	// DefaultRendezvousTimeout bounds Rendezvous when Config.HandshakeTimeout is 0: UDT 4.11's
	// 10 × 3 s (spec §3.3), room for the peers to start far apart.
	DefaultRendezvousTimeout = 30 * time.Second
	DefaultIdleTimeout       = 10 * time.Second // dead-peer detection; the reference takes ~46 s (spec §11.3)
	DefaultLinger            = 60 * time.Second // how long a closed connection still delivers unacknowledged data (the reference: 180 s)
	DefaultBacklog           = 1024             // connections waiting in Accept (the reference's appserver: 10)

	minMSS = 76 // a peer's smallest MSS: UDT 4.11's bound, 28 bytes IP+UDP + the 48-byte handshake body (spec §1.1)
	// minConfigMSS is the smallest Config.MSS: a handshake datagram is 28 + 16 (UDT header) + 48
	// bytes, which UDT 4.11's bound (minMSS) leaves out; below it a connection can never form.
	minConfigMSS      = 92
	maxMSS            = 65535   // largest UDP datagram plus headers
	minFlowWindow     = 2       // spec §10: the flow window field is at least 2
	maxFlowWindow     = 1 << 20 // cap on any flow window we accept or configure (packets)
	handshakeInterval = 250 * time.Millisecond
	udpIPOverhead     = 28 // bytes of IPv4+UDP header counted inside MSS (spec §1.1)
	headerSize        = 16 // UDT header bytes
)

// Config tunes a connection or listener. A nil *Config and the zero value both mean all defaults;
// every field's zero value selects its default.
type Config struct {
	// MSS is the maximum segment size in bytes, IP and UDP headers included (UDT_MSS): the
	// largest data packet is MSS−28 bytes and carries MSS−44 bytes of data. Connections use the
	// smaller of both sides' MSS. Default 1500; valid 92–65535 (a handshake datagram is 92 bytes;
	// UDT 4.11 checks 76, forgetting its header; a peer advertising 76–91 is still accepted).
	//
	// It caps path MTU discovery (on by default on Linux, see pmtu.go): a connection starts with
	// 1200-byte packets and probes up to the smaller of MSS−28 and the kernel's path MTU to the
	// peer less the IP and UDP headers, so a 1400-byte VPN path ends near 1372-byte packets
	// instead of fragmenting or losing 1472-byte ones. The default stays 1500 where a path allows
	// more (jumbo frames, loopback's 64 KiB) because UDT4 peers and most paths assume it and one
	// lost 64 KiB datagram costs 44 packets' worth; raise it to use such paths. Where Don't
	// Fragment cannot be set (other systems, PacketConns that are not *net.UDPConn) there is no
	// discovery and packets stay MSS−28 bytes (the system fragments them where a path is
	// smaller). A UDT4 peer ACKs every packet shorter than the negotiated MSS's: on a path below
	// the MSS, a UDT4 receiver sends one ACK per packet.
	MSS int

	// FlowWindow is the largest flow window in packets: the most packets this side lets its peer
	// keep unacknowledged (UDT_FC), and the cap on the window the peer may ask for. The window
	// advertised in the handshake is min(FlowWindow, receive buffer in packets). Default 25600.
	FlowWindow int

	// SendBuffer is the send buffer in bytes; Write blocks while it is full (flow control).
	// Default 32768 packets' payload (32768·(MSS−44) bytes, 47.7 MB at MSS 1500), where UDT 4.11
	// has 8192: a lost retransmission keeps a hole, and everything sent after it, in both buffers
	// for several round trips, and 8192 packets are only 3.3 BDPs at 100 Mbit/s · 300 ms (the
	// sender stalled there in the simulations). Memory is taken as used, in 64 KiB pages, and
	// given back as the data is acknowledged, so an idle connection holds none (its per-packet
	// bookkeeping, a few dozen bytes a packet, is allocated with the connection). At most
	// 2^20 packets' payload (the largest flow window); more is clamped to that.
	SendBuffer int

	// RecvBuffer is the receive buffer in bytes, rounded down to whole packets of MSS−44 bytes.
	// Default 32768 packets' payload (see SendBuffer); the flow window advertised is the smaller
	// of it and FlowWindow. At most 2^20 packets' payload; more is clamped to that.
	RecvBuffer int

	// Pacer names the pacer.Waiter backend that times every data packet's departure (see
	// pacer.WaiterNames: "hybrid", "nanosleep", "timerfd", "spin", "gotimer"). Connections that
	// share a UDP socket share the pacer of the socket's first user. Default pacer.DefaultWaiter.
	// Use "gotimer" under testing/synctest.
	Pacer string

	// PacingTolerance is how far from its scheduled time a data packet may leave, before or
	// after it: the precision asked of the pacer, which it trades for CPU (pacer.Config.
	// Tolerance). Each wake of the pacer sends every packet due within the tolerance as one
	// batch, and the hybrid backend sleeps instead of spinning whenever its wake-up tail fits in
	// it or would need a spin of over a tenth of the wait. Default pacer.DefaultTolerance (200
	// µs: a few packets per wake at 100 Mbit/s, and a pure sleep wherever the host's wake-up
	// tail fits in it; its godoc gives the measurements);
	// negative means exact pacing (pacer.Exact), every packet at or after its time, at the CPU
	// cost of spinning through the wake-up tail. A wider one saves more CPU for bursts of up to
	// twice it of the rate: 500 µs halves the pacing CPU at 100 Mbit/s on the development VM but
	// costs paths with buffers under a BDP at short RTTs (README, "Precision at a CPU budget").
	// Connections that share a UDP socket use the tolerance of its first user.
	PacingTolerance time.Duration

	// StrictPacing turns off catch-up in the release schedule: each data packet waits a full send
	// period after the previous one actually left, as a sender on a coarse timer does (a 1 ms
	// timer then caps the rate near 1000 packets/s). For experiments and pacerbench-style
	// comparisons; default off (late packets catch up in bounded bursts).
	StrictPacing bool

	// Congestion makes the congestion controller of each connection. Default (nil):
	// congestion.BBRFactory(), a
	// model-based controller (BBRv3-style, from the sender's own delivery-rate samples) that
	// takes random loss below the path's congestion level for what it is. UDT 4.11's native
	// DAIMD (congestion.NativeFactory) is there for compatibility experiments. A factory that
	// returns nil gets the default controller for that connection (never none).
	Congestion congestion.Factory

	// MaxBandwidth caps the sending rate in bytes/s (UDT_MAXBW, spec §5.5). 0 means no cap.
	MaxBandwidth int64

	// HandshakeTimeout bounds Dial: requests are re-sent every 250 ms until it passes (spec §3.2).
	// Default (zero or negative) 3 s; for Rendezvous, 30 s (DefaultRendezvousTimeout, the
	// reference's, spec §3.3).
	HandshakeTimeout time.Duration
	rdvTimeout       time.Duration // Rendezvous's bound: HandshakeTimeout as given, or its default

	// IdleTimeout is how long a connection waits without hearing anything from its peer before it
	// declares the peer dead; blocked and later calls then fail with a net.Error whose Timeout()
	// reports true. Default (zero or negative) 10 s. It is not bounded below: a value shorter
	// than the peers' keep-alive interval (1 s) breaks connections that are merely idle. A peer
	// whose host reports its port closed (ICMP port unreachable, as a killed process's does) is
	// declared dead sooner, if nothing at all arrives from it within two keep-alive intervals
	// plus a retransmission timeout of the report (about 2–3 s), with an error that also matches
	// syscall.ECONNREFUSED (Linux; a forged report cannot end a live connection, whose peer
	// speaks more often).
	IdleTimeout time.Duration

	// Linger is how long a closed connection goes on delivering the data written before Close
	// (in the background: Close returns at once) until the peer has acknowledged it, before it
	// sends Shutdown (UDT_LINGER, spec §3.4); CloseContext reports whether it all arrived.
	// Negative means do not wait: Shutdown at once. Default 60 s.
	Linger time.Duration

	// MessageMode makes connections carry messages instead of a byte stream (UDT_DGRAM, socket
	// type 2, spec §7.2): each Write or WriteMessage is one message, delivered whole and alone or
	// not at all, and each Read or ReadMessage returns exactly one (see Conn.WriteMessage). Both
	// ends must use the same mode: a listener refuses a peer of the other mode (handshake type
	// 1002), and Dial then fails with an error matching ErrRejected and ErrModeMismatch. Default
	// false: a reliable byte stream (UDT_STREAM).
	MessageMode bool

	// Backlog is the number of established connections that may wait for Accept; further
	// requests are rejected (handshake type 1002). Default (zero or negative) 1024.
	Backlog int

	// noGRO: the socket turns UDP_GRO on only once bulk arrives (set by Dial for the socket it
	// opens itself; see udpio.NewLazyGRO). Not a user setting.
	noGRO bool

	// Logger receives what happens to connections and listeners worth an operator's
	// attention, with the local and remote address and the socket ID (the local address is the
	// socket's bound one, as Listener.Addr gives it: 0.0.0.0:port for a Dial that bound no
	// address, where Conn.LocalAddr names the source address the route picks):
	//   - Warn: a dead peer (nothing heard for IdleTimeout) or a peer's error signal, the
	//     connection's counters then; hostile or misdirected packets dropped (malformed, an ACK
	//     or NAK of data never sent, packets from another address than the peer's); connection
	//     requests rejected because the accept backlog is full.
	//   - Error: the UDP socket failed under its connections.
	//   - Info: a change of the path MTU in use; requests rejected for their UDT version or
	//     socket type.
	//   - Debug: connections established and closed, with their counters; benign drops
	//     (duplicate data, data beyond the window, stray ACK2s, unused control types, stray
	//     datagrams of unknown socket IDs); bad handshake cookies and fields; Dial's
	//     rejections; congestion control phase changes (a controller with a Phase() string or
	//     SlowStart() bool method tells them) and retransmission timeouts.
	// Each reason is rate-limited per connection (per listener, per socket): the first
	// occurrence is logged at once, then at most one line per 10 s, with the count since the
	// last line ("count"); Close logs what is left. Nothing is logged while a connection's
	// mutex is held: lines are recorded under it and logged after. Default: none.
	Logger *slog.Logger

	// Tracer, if set, is called for each connection when it is established (dialed or
	// accepted) and returns the trace.Tracer that receives its events, or nil not to trace it;
	// it may be called for several connections at once. It and the Tracer run on a goroutine
	// of the connection's own, never under its locks nor
	// on its pacer or reader: a slow Tracer costs the connection only memory, up to 65 536
	// queued events, beyond which events are dropped and counted (trace.EventsLost). Close
	// returns at once, while the connection goes on (and its events with it); CloseContext
	// returns after the last event, Closed, was delivered, so close a trace's file after
	// CloseContext, not after Close (and a Tracer must not call CloseContext). Events come in
	// the order they were recorded; an event's time is when it happened (for a received packet,
	// the kernel's arrival stamp), so times can step back by as long as a packet waited in the
	// socket. Without a Tracer, or once the factory returned nil, a connection builds no events
	// and allocates nothing for them. See package trace; trace.NewJSONWriter writes JSON lines.
	Tracer func(trace.ConnInfo) trace.Tracer
}

// resolved returns a copy of c with every default filled in, or an error naming the bad field.
func (c *Config) resolved() (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.MSS == 0 {
		r.MSS = DefaultMSS
	}
	if r.MSS < minConfigMSS || r.MSS > maxMSS {
		return r, fmt.Errorf("Config.MSS %d out of range [%d, %d]", r.MSS, minConfigMSS, maxMSS)
	}
	if r.FlowWindow == 0 {
		r.FlowWindow = DefaultFlowWindow
	}
	if r.FlowWindow < minFlowWindow || r.FlowWindow > maxFlowWindow {
		return r, fmt.Errorf("Config.FlowWindow %d out of range [%d, %d]", r.FlowWindow, minFlowWindow, maxFlowWindow)
	}
	payload := r.MSS - udpIPOverhead - headerSize
	if r.SendBuffer == 0 {
		r.SendBuffer = DefaultBufferPackets * payload
	}
	if r.SendBuffer < payload {
		return r, fmt.Errorf("Config.SendBuffer %d smaller than one packet's payload (%d bytes)", r.SendBuffer, payload)
	}
	if r.SendBuffer/payload > maxFlowWindow { // as RecvBuffer: more could never be in flight
		r.SendBuffer = maxFlowWindow * payload
	}
	if r.RecvBuffer == 0 {
		r.RecvBuffer = DefaultBufferPackets * payload
	}
	if r.RecvBuffer < minFlowWindow*payload {
		return r, fmt.Errorf("Config.RecvBuffer %d smaller than two packets' payload (%d bytes)", r.RecvBuffer, 2*payload)
	}
	if r.RecvBuffer/payload > maxFlowWindow {
		r.RecvBuffer = maxFlowWindow * payload
	}
	if r.Pacer == "" {
		r.Pacer = pacer.DefaultWaiter
	}
	if r.Congestion == nil {
		r.Congestion = congestion.BBRFactory()
	}
	if r.MaxBandwidth < 0 {
		return r, fmt.Errorf("Config.MaxBandwidth %d is negative", r.MaxBandwidth)
	}
	if r.rdvTimeout <= 0 {
		r.rdvTimeout = r.HandshakeTimeout
		if r.rdvTimeout <= 0 {
			r.rdvTimeout = DefaultRendezvousTimeout
		}
	}
	if r.HandshakeTimeout <= 0 {
		r.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if r.IdleTimeout <= 0 {
		r.IdleTimeout = DefaultIdleTimeout
	}
	if r.Linger == 0 {
		r.Linger = DefaultLinger
	}
	if r.Backlog <= 0 {
		r.Backlog = DefaultBacklog
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// socketType is the handshake's socket type for c (spec §2.1 word 1).
func (c *Config) socketType() packet.SocketType {
	if c.MessageMode {
		return packet.SocketDgram
	}
	return packet.SocketStream
}

// payloadSize is the data payload per packet in bytes for a given MSS (spec §1.1).
func payloadSize(mss int) int { return mss - udpIPOverhead - headerSize }

// recvWindow is the flow window this side advertises: min(FlowWindow, receive buffer in packets).
func (c *Config) recvWindow(mss int) int {
	return min(c.FlowWindow, c.RecvBuffer/payloadSize(mss))
}
