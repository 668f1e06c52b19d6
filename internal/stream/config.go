package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// Protocol constants (spec §4.1, §2.3, §1.1).
const (
	// SYN is UDT's synchronisation interval: the full-ACK period and rate-control interval.
	SYN = 10 * time.Millisecond
	// lightACKEvery is the number of data packets between light ACKs (m_iSelfClockInterval).
	lightACKEvery = 64
	headerSize    = packet.HeaderSize    // 16 bytes: four 32-bit words
	udpIPOverhead = packet.UDPIPOverhead // 28 bytes subtracted from the MSS for IP and UDP
	minMSS        = packet.MinMSS        // 76 bytes
	// maxWindow bounds every window and buffer in packets, well below the 2^30 sequence-comparison
	// horizon (spec §1.6, §9.2).
	maxWindow = 1 << 20
	// minRTO is the floor of the retransmission timeouts after the tail-loss probe (UDT 4.11 uses
	// 300 ms because its timers are scanned every ~100 ms, spec §4.1; ours are exact).
	minRTO = 100 * time.Millisecond
	// maxRTO caps the backed-off retransmission timeout: RFC 6298 §2.5 allows a cap of at least
	// 60 s (the idle timeout, 10 s by default, ends a silent connection long before).
	maxRTO = 60 * time.Second
	// keepAliveEvery is the longest silence before a keep-alive is sent (SRT's 1 s, spec §9.5).
	keepAliveEvery = time.Second
	// ackHistory is the number of ACKs remembered for ACK2 matching (UDT4 keeps 1024; 256 ACKs
	// cover 2.5 s of full ACKs).
	ackHistory = 256
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMSS         = 1500
	DefaultFlowWindow  = 25600
	DefaultRecvBuffer  = 8192             // packets
	DefaultSendBuffer  = 8192 * 1472      // bytes
	DefaultIdleTimeout = 10 * time.Second // dead-peer detection
)

// Config describes one established connection. conn fills it from the handshake.
type Config struct {
	// LocalID and PeerID are the UDT socket IDs; PeerID goes into every packet's destination field.
	LocalID, PeerID uint32
	// ISN is our first data sequence number; PeerISN the peer's (31 bits; spec §3.2: the listener
	// reuses the client's ISN, so both are usually equal).
	ISN, PeerISN uint32
	// MSS is the negotiated maximum segment size in bytes including 28 bytes of IP/UDP headers
	// (default 1500, at least 76). A packet is MSS−28 bytes and carries at most MSS−44 payload bytes.
	MSS int
	// PeerFlowWindow is the peer's flow window from the handshake, in packets (default 25600,
	// capped at 2^20). It bounds the packets in flight together with the ACKs' buffer field.
	PeerFlowWindow int
	// HandshakeRTT is the handshake's round-trip time (congestion.Params.RTT), 0 if unknown.
	HandshakeRTT time.Duration
	// SendBuffer is the send buffer in bytes (default 8192·1472), rounded down to whole packets of
	// MSS−44 payload bytes (at least one); a packet sent short still takes a whole packet's room
	// until acknowledged (spec §7.1). Memory is taken as used, in 64 KiB pages (internal/buffer).
	SendBuffer int
	// RecvBuffer is the receive buffer in packets (default 8192, capped at 2^20); our advertised flow
	// window never exceeds its free slots. Memory is taken as used, in 64 KiB pages.
	RecvBuffer int
	// Controller decides the send period and the congestion window (spec §5). New calls its Init.
	// nil means no limit but the flow window.
	Controller congestion.Controller
	// MaxBandwidth caps the sending rate in bytes/s (UDT_MAXBW, spec §5.5: period ≥ MSS/MaxBandwidth);
	// 0 means no cap.
	MaxBandwidth int64
	// IdleTimeout is how long the peer may stay silent before the connection breaks (default 10 s).
	IdleTimeout time.Duration
	// Start is when the connection started; header timestamps are µs since Start (32 bits, wrapping).
	Start time.Time
	// Messages selects message mode (UDT_DGRAM, socket type 2, spec §7.2): WriteMessage and
	// ReadMessage move whole messages, each with its own number, position bits, in-order flag and
	// time to live; Write and Read move nothing. Both ends must agree (the handshake's socket
	// type).
	Messages bool
	// PacingTolerance is how far from its slot a data packet may leave (pacer.SchedulerConfig.
	// Tolerance): each release lets out the packets due by now + PacingTolerance. 0 means
	// pacer.DefaultTolerance, negative none (pacer.Exact). Use the data pacer's tolerance. The
	// catch-up burst follows the rate by pacer.BurstFor.
	PacingTolerance time.Duration
	// StrictPacing disables catch-up: each packet waits a full period after the previous one
	// (pacer.SchedulerConfig.Strict), the classic coarse-timer sender.
	StrictPacing bool
	// PathMTU configures the data packet size and its discovery (pmtud.go). The zero value sends
	// MSS−28-byte packets without discovery.
	PathMTU PathMTUConfig
	// Tracer, if not nil, receives the engine's events (trace.Kind) synchronously from within
	// engine calls; it must not call back into the Endpoint. Per-packet events (PacketSent,
	// PacketRetransmitted, PacketReceived, PacerLate) only with TracePackets.
	Tracer       trace.Tracer
	TracePackets bool
}

func (c *Config) applyDefaults() {
	if c.MSS == 0 {
		c.MSS = DefaultMSS
	}
	if c.MSS < minMSS {
		c.MSS = minMSS
	}
	if c.MSS > 65535 {
		c.MSS = 65535
	}
	if c.PeerFlowWindow <= 0 {
		c.PeerFlowWindow = DefaultFlowWindow
	}
	c.PeerFlowWindow = clampInt(c.PeerFlowWindow, 2, maxWindow)
	if c.RecvBuffer <= 0 {
		c.RecvBuffer = DefaultRecvBuffer
	}
	c.RecvBuffer = clampInt(c.RecvBuffer, 2, maxWindow)
	if c.SendBuffer <= 0 {
		c.SendBuffer = DefaultSendBuffer
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxBandwidth < 0 {
		c.MaxBandwidth = 0
	}
	if c.Controller == nil {
		c.Controller = unlimited{}
	}
	c.ISN &= uint32(seqno.MaxSeq)
	c.PeerISN &= uint32(seqno.MaxSeq)
}

func clampInt(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// unlimited is the controller used when Config.Controller is nil: no rate limit, no window.
type unlimited struct{}

func (unlimited) Init(time.Time, congestion.Params)       {}
func (unlimited) OnACK(time.Time, congestion.ACK)         {}
func (unlimited) OnLoss(time.Time, congestion.Loss)       {}
func (unlimited) OnTimeout(time.Time)                     {}
func (unlimited) OnPacketSent(time.Time, uint32, int)     {}
func (unlimited) OnPacketReceived(time.Time, uint32, int) {}
func (unlimited) State() congestion.State                 { return congestion.State{} }
