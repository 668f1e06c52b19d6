package conn

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/pacer"
)

// Defaults of Config's fields. They follow UDT 4.11 (spec §7.1) unless noted.
const (
	DefaultMSS              = 1500             // bytes, IP and UDP headers included (UDT_MSS)
	DefaultFlowWindow       = 25600            // packets (UDT_FC)
	DefaultBufferPackets    = 8192             // send and receive buffers, in packets of MSS−44 bytes (UDT_SNDBUF, UDT_RCVBUF)
	DefaultHandshakeTimeout = 3 * time.Second  // spec §3.2: requests re-sent every 250 ms for 3 s
	DefaultIdleTimeout      = 10 * time.Second // dead-peer detection; the reference takes ~46 s (spec §11.3)
	DefaultLinger           = 60 * time.Second // how long Close waits for unacknowledged data (the reference: 180 s)
	DefaultBacklog          = 1024             // connections waiting in Accept (the reference's appserver: 10)

	minMSS            = 76      // 28 bytes IP+UDP + 48-byte handshake (spec §1.1)
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
	// MSS is the maximum segment size in bytes, IP and UDP headers included (UDT_MSS). A data
	// packet's payload is MSS−44 bytes. Connections use the smaller of both sides' MSS.
	// Default 1500; valid 76–65535.
	MSS int

	// FlowWindow is the largest flow window in packets: the most packets this side lets its peer
	// keep unacknowledged (UDT_FC), and the cap on the window the peer may ask for. The window
	// advertised in the handshake is min(FlowWindow, receive buffer in packets). Default 25600.
	FlowWindow int

	// SendBuffer is the send buffer in bytes; Write blocks while it is full (flow control).
	// Default 8192 packets' payload (8192·(MSS−44) bytes, 11.9 MB at MSS 1500).
	SendBuffer int

	// RecvBuffer is the receive buffer in bytes, rounded down to whole packets of MSS−44 bytes.
	// Default 8192 packets' payload.
	RecvBuffer int

	// Pacer names the pacer.Waiter backend that times every data packet's departure (see
	// pacer.WaiterNames: "hybrid", "nanosleep", "timerfd", "spin", "gotimer"). Connections that
	// share a UDP socket share the pacer of the socket's first user. Default pacer.DefaultWaiter.
	// Use "gotimer" under testing/synctest.
	Pacer string

	// StrictPacing turns off catch-up in the release schedule: each data packet waits a full send
	// period after the previous one actually left, as a sender on a coarse timer does (a 1 ms
	// timer then caps the rate near 1000 packets/s). For experiments and pacerbench-style
	// comparisons; default off (late packets catch up in bounded bursts).
	StrictPacing bool

	// Congestion makes the congestion controller of each connection. Default: congestion.BBR, a
	// model-based controller (BBRv3-style, from the sender's own delivery-rate samples) that
	// takes random loss below the path's congestion level for what it is. UDT 4.11's native
	// DAIMD (congestion.NativeFactory) is there for compatibility experiments.
	Congestion congestion.Factory

	// MaxBandwidth caps the sending rate in bytes/s (UDT_MAXBW, spec §5.5). 0 means no cap.
	MaxBandwidth int64

	// HandshakeTimeout bounds Dial: requests are re-sent every 250 ms until it passes (spec §3.2).
	// Default 3 s.
	HandshakeTimeout time.Duration

	// IdleTimeout is how long a connection waits without hearing anything from its peer before it
	// declares the peer dead; blocked and later calls then fail with a net.Error whose Timeout()
	// reports true. Default 10 s.
	IdleTimeout time.Duration

	// Linger is how long Close waits for written data to be acknowledged before it sends Shutdown
	// (UDT_LINGER, spec §3.4). Negative means do not wait. Default 60 s.
	Linger time.Duration

	// Backlog is the number of established connections that may wait for Accept; further
	// requests are rejected (handshake type 1002). Default 1024.
	Backlog int

	// noGRO: the socket turns UDP_GRO on only once bulk arrives (set by Dial for the socket it
	// opens itself; see udpio.NewLazyGRO). Not a user setting.
	noGRO bool

	// Logger receives debug and warning events (handshake rejections, dropped packets by
	// reason, dead peers). Default: none.
	Logger *slog.Logger
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
	if r.MSS < minMSS || r.MSS > maxMSS {
		return r, fmt.Errorf("udt: Config.MSS %d out of range [%d, %d]", r.MSS, minMSS, maxMSS)
	}
	if r.FlowWindow == 0 {
		r.FlowWindow = DefaultFlowWindow
	}
	if r.FlowWindow < minFlowWindow || r.FlowWindow > maxFlowWindow {
		return r, fmt.Errorf("udt: Config.FlowWindow %d out of range [%d, %d]", r.FlowWindow, minFlowWindow, maxFlowWindow)
	}
	payload := r.MSS - udpIPOverhead - headerSize
	if r.SendBuffer == 0 {
		r.SendBuffer = DefaultBufferPackets * payload
	}
	if r.SendBuffer < payload {
		return r, fmt.Errorf("udt: Config.SendBuffer %d smaller than one packet's payload (%d bytes)", r.SendBuffer, payload)
	}
	if r.RecvBuffer == 0 {
		r.RecvBuffer = DefaultBufferPackets * payload
	}
	if r.RecvBuffer < minFlowWindow*payload {
		return r, fmt.Errorf("udt: Config.RecvBuffer %d smaller than two packets' payload (%d bytes)", r.RecvBuffer, 2*payload)
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
		return r, fmt.Errorf("udt: Config.MaxBandwidth %d is negative", r.MaxBandwidth)
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

// payloadSize is the data payload per packet in bytes for a given MSS (spec §1.1).
func payloadSize(mss int) int { return mss - udpIPOverhead - headerSize }

// recvWindow is the flow window this side advertises: min(FlowWindow, receive buffer in packets).
func (c *Config) recvWindow(mss int) int {
	return min(c.FlowWindow, c.RecvBuffer/payloadSize(mss))
}
