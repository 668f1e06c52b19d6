package stream

import (
	"fmt"
	"io"
	"time"

	"github.com/udtgo/udt/congestion"
)

// Endpoint is the protocol engine of one established connection. Create it with New. It is not
// safe for concurrent use.
type Endpoint struct {
	cfg         Config
	start       time.Time
	cc          congestion.Controller
	pktSize     int // MSS − 28: the largest datagram
	payloadSize int // MSS − 44: the largest payload
	minPeriod   time.Duration
	kaInterval  time.Duration

	// Sender (spec §4.3).
	snd            sendBuffer
	fl             flight
	sndCurrSeq     uint32 // largest sequence number sent
	sndLastAck     uint32 // first unacknowledged sequence number (light ACKs included)
	sndLastDataAck uint32 // last ACK number of a full or medium ACK that advanced
	msgNo          uint32
	flowWindow     int
	cwnd           int // congestion window in packets, 0 = none
	period         time.Duration
	pace           pacing
	pairNext       bool // the previous packet opened a packet pair: the next leaves at once
	recvRate       int  // smoothed receiver packet arrival speed (packets/s, spec §6.3)
	bandwidth      int  // smoothed link capacity (packets/s)
	rtoBase        time.Duration
	rtoCount       int
	lossRanges     []congestion.Range // scratch for Controller.OnLoss

	// Receiver (spec §4.4).
	rcv            recvBuffer
	rcvCap         int    // RecvBuffer in packets: the acceptance window
	rcvBase        uint32 // first sequence number not yet consumed by Read
	readOff        int    // bytes of rcvBase's payload already read
	rcvNext        uint32 // first missing sequence number: the ACK number
	lrsn           uint32 // largest received sequence number
	rcvLastAck     uint32 // ACK number of the last full or medium ACK sent
	rcvLastAckAck  uint32 // largest ACK number confirmed by an ACK2
	ackSeqNo       uint32
	lastACKTime    time.Duration // last full or medium ACK sent
	lastFullACK    time.Duration
	ackForce       bool // an ACK is due at once (short packet, controller interval)
	pktsSinceACK   int
	pktsSinceLight int
	advertised     int // flow window in the last ACK sent
	acks           ackWindow
	arrivals       arrivalWindow
	nakTick        time.Duration // last periodic NAK tick
	nakTickLRSN    uint32        // LRSN at that tick: losses at or below it were known for a tick
	lossy          bool          // the receiver loss list is non-empty (rcvNext ≠ lrsn+1)

	// Shared.
	rtt        rttEstimator
	lastRecv   time.Duration // anything received from the peer
	lastSend   time.Duration // anything sent to the peer
	err        error
	peerClosed bool
	closed     bool
	ctrl       []byte   // scratch for control packets
	words      []uint32 // scratch for control bodies

	stats Stats
}

// New returns the engine of an established connection; now is the time the connection became
// established. It calls cfg.Controller.Init.
func New(cfg Config, now time.Time) *Endpoint {
	cfg.applyDefaults()
	if cfg.Start.IsZero() {
		cfg.Start = now
	}
	e := &Endpoint{
		cfg:         cfg,
		start:       cfg.Start,
		cc:          cfg.Controller,
		pktSize:     cfg.MSS - udpIPOverhead,
		payloadSize: cfg.MSS - udpIPOverhead - headerSize,
		kaInterval:  min(keepAliveEvery, cfg.IdleTimeout/8),
		rcvCap:      cfg.RecvBuffer,
		flowWindow:  cfg.PeerFlowWindow,
		msgNo:       1,
		ctrl:        make([]byte, cfg.MSS-udpIPOverhead),
		words:       make([]uint32, 0, (cfg.MSS-udpIPOverhead-headerSize)/4),
		lossRanges:  make([]congestion.Range, 0, (cfg.MSS-udpIPOverhead-headerSize)/4),
	}
	if cfg.MaxBandwidth > 0 {
		e.minPeriod = time.Duration(int64(cfg.MSS) * int64(time.Second) / cfg.MaxBandwidth)
	}
	t := e.since(now)
	e.snd.max = cfg.SendBuffer
	e.fl.init(cfg.PeerFlowWindow)
	e.sndCurrSeq = seqDec(cfg.ISN)
	e.sndLastAck = cfg.ISN
	e.sndLastDataAck = cfg.ISN
	e.fl.cursor = cfg.ISN
	e.rtoBase = t

	e.rcv.init(cfg.RecvBuffer, e.payloadSize)
	e.rcvBase = cfg.PeerISN
	e.rcvNext = cfg.PeerISN
	e.lrsn = seqDec(cfg.PeerISN)
	e.rcvLastAck = cfg.PeerISN
	e.rcvLastAckAck = cfg.PeerISN
	e.advertised = cfg.RecvBuffer
	e.arrivals.init()

	e.rtt.init()
	e.lastRecv, e.lastSend = t, t
	e.lastACKTime, e.lastFullACK = t, t
	e.pace.next = t

	e.cc.Init(now, congestion.Params{MSS: cfg.MSS, FlowWindow: cfg.PeerFlowWindow, ISN: cfg.ISN})
	e.applyCC()
	return e
}

// since converts now to the engine's clock: time since Config.Start.
func (e *Endpoint) since(now time.Time) time.Duration { return now.Sub(e.start) }

// at converts the engine's clock back to a time.Time.
func (e *Endpoint) at(t time.Duration) time.Time { return e.start.Add(t) }

// timestamp is the 32-bit µs header timestamp (spec §1.2).
func timestamp(t time.Duration) uint32 { return uint32(t / time.Microsecond) }

// applyCC reads the controller's decision (spec §5.5 CCUpdate).
func (e *Endpoint) applyCC() {
	st := e.cc.State()
	p := max(st.Period, 0)
	if p < e.minPeriod {
		p = e.minPeriod
	}
	e.period = p
	e.pace.interval = p
	e.cwnd = 0
	if st.Window > 0 {
		e.cwnd = max(int(min(st.Window, maxWindow)), 2)
	}
}

// PeerIdleError is the error of a connection whose peer sent nothing for IdleTimeout. It is a
// net.Error whose Timeout() is true.
type PeerIdleError struct {
	Idle time.Duration // how long the peer was silent
}

func (e *PeerIdleError) Error() string {
	return fmt.Sprintf("udt: peer unresponsive: nothing received for %v", e.Idle)
}

// Timeout reports true: the connection broke because a timer expired.
func (e *PeerIdleError) Timeout() bool { return true }

// Temporary reports false: the connection is gone.
func (e *PeerIdleError) Temporary() bool { return false }

// PeerError is the error of a connection whose peer sent an error signal (control type 8, spec
// §2; UDT4 sends code 4000 when recvfile cannot write its file).
type PeerError struct {
	Code uint32
}

func (e *PeerError) Error() string { return fmt.Sprintf("udt: peer reported error %d", e.Code) }

// Err returns nil while the connection works, a *PeerIdleError once the peer stayed silent for
// IdleTimeout, or a *PeerError after the peer's error signal. A peer's Shutdown is not an error:
// see PeerClosed and Read.
func (e *Endpoint) Err() error { return e.err }

// PeerClosed reports whether the peer sent Shutdown. Nothing more is sent afterwards; Read returns
// the remaining in-order data and then io.EOF, Write returns 0.
func (e *Endpoint) PeerClosed() bool { return e.peerClosed }

// active reports whether the connection still exchanges packets.
func (e *Endpoint) active() bool { return !e.closed && e.err == nil && !e.peerClosed }

// Write copies as much of p as fits into the send buffer and returns the count; 0 means the buffer
// is full (wait for CanWrite) or the connection no longer sends (check Err and PeerClosed).
func (e *Endpoint) Write(p []byte) int {
	if !e.active() {
		return 0
	}
	n := e.snd.write(p)
	e.stats.BytesWritten += uint64(n)
	return n
}

// CanWrite reports whether Write would accept at least one byte, or the connection stopped sending
// (so that a blocked writer wakes up and sees Err or PeerClosed).
func (e *Endpoint) CanWrite() bool { return !e.active() || e.snd.free() > 0 }

// Flushed reports whether everything written has been acknowledged by the peer.
func (e *Endpoint) Flushed() bool { return e.snd.head == e.snd.tail }

// Read copies in-order received bytes into p. It returns (0, nil) when nothing is available yet
// (wait for CanRead), (0, io.EOF) after the peer's Shutdown once all in-order data has been read,
// and (0, Err()) once the connection broke and no data is left.
func (e *Endpoint) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && e.rcvBase != e.rcvNext {
		b := e.rcv.at(e.rcvBase)
		c := copy(p[n:], b[e.readOff:])
		n += c
		e.readOff += c
		if e.readOff == len(b) {
			e.rcv.release(e.rcvBase)
			e.rcvBase = seqInc(e.rcvBase)
			e.readOff = 0
		}
	}
	e.stats.BytesRead += uint64(n)
	if n > 0 {
		e.maybeWindowUpdate()
		return n, nil
	}
	if len(p) == 0 {
		return 0, nil
	}
	if e.err != nil {
		return 0, e.err
	}
	if e.peerClosed {
		return 0, io.EOF
	}
	return 0, nil
}

// CanRead reports whether Read would return data or an error (EOF included).
func (e *Endpoint) CanRead() bool { return e.rcvBase != e.rcvNext || e.peerClosed || e.err != nil }

// Shutdown sends the Shutdown control packet (spec §3.4) once; afterwards the endpoint sends
// nothing more and ignores incoming packets. conn calls it after the linger.
func (e *Endpoint) Shutdown(now time.Time) {
	if e.closed {
		return
	}
	if e.err == nil && !e.peerClosed {
		e.sendCtrl(e.since(now), ctrlShutdown, 0, nil)
	}
	e.closed = true
}

// sendCtrl encodes a control packet with body words and hands it to Output. A body-less packet
// gets UDT4's 4 bytes of padding (spec §1.1).
func (e *Endpoint) sendCtrl(t time.Duration, typ, info uint32, body []uint32) {
	b := e.ctrl
	putCtrlHeader(b, typ, info, timestamp(t), e.cfg.PeerID)
	n := headerSize
	if len(body) == 0 {
		be.PutUint32(b[n:], 0)
		n += 4
	}
	for _, w := range body {
		be.PutUint32(b[n:], w)
		n += 4
	}
	e.cfg.Output(b[:n])
	e.lastSend = t
	e.stats.CtrlSent++
}

// HandlePacket processes one datagram addressed to this connection. b is used only during the
// call. Malformed, forged and out-of-window packets are dropped and counted in Stats().Drops.
func (e *Endpoint) HandlePacket(now time.Time, b []byte) {
	if e.closed || e.err != nil {
		return
	}
	t := e.since(now)
	if len(b) < headerSize {
		e.stats.Drops.Malformed++
		return
	}
	if be.Uint32(b[12:]) != e.cfg.LocalID {
		e.stats.Drops.WrongDest++
		return
	}
	w0 := be.Uint32(b)
	if w0&flagControl == 0 {
		e.onData(t, now, b)
	} else {
		e.onControl(t, now, w0, b)
	}
	if e.active() {
		e.checkACK(t)
	}
}

func (e *Endpoint) onControl(t time.Duration, now time.Time, w0 uint32, b []byte) {
	body := b[headerSize:]
	if len(body)%4 != 0 {
		e.stats.Drops.Malformed++
		return
	}
	info := be.Uint32(b[4:])
	switch typ := (w0 >> 16) & 0x7FFF; typ {
	case ctrlKeepAlive:
		e.stats.KeepAliveRecv++
	case ctrlACK:
		if !e.onACK(t, now, info, body) {
			return
		}
	case ctrlNAK:
		if !e.onNAK(t, now, body) {
			return
		}
	case ctrlACK2:
		e.onACK2(t, info)
	case ctrlShutdown:
		e.peerClosed = true
	case ctrlError:
		e.err = &PeerError{Code: info}
	default:
		// Handshake repeats are conn's business; congestion warnings, message-drop requests
		// (message mode only) and user-defined packets are not used by a stream connection.
		e.stats.Drops.IgnoredCtrl++
	}
	e.heard(t)
}

// heard records that the peer is alive.
func (e *Endpoint) heard(t time.Duration) {
	e.lastRecv = t
}
