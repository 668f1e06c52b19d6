package stream

import (
	"fmt"
	"io"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/arrival"
	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/losslist"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/rtt"
	"github.com/udtgo/udt/internal/seqno"
	"github.com/udtgo/udt/pacer"
)

// Endpoint is the protocol engine of one established connection. Create it with New. It is not
// safe for concurrent use.
type Endpoint struct {
	cfg         Config
	start       time.Time
	cc          congestion.Controller
	dcc         congestion.DeliveryController // cc, when it takes delivery samples; else nil
	pktSize     int                           // MSS − 28: the largest datagram
	payloadSize int                           // MSS − 44: the largest payload
	minPeriod   time.Duration
	kaInterval  time.Duration

	// Sender (spec §4.3). snd numbers the packets: snd.AckSeq() is the first unacknowledged
	// sequence number (light ACKs included), snd.NextSeq() the next new one (sndCurrSeq + 1).
	snd            *buffer.SendBuffer
	sloss          *losslist.Sender
	sched          *pacer.Scheduler
	sndLastDataAck seqno.Seq // last ACK number of a full or medium ACK that advanced
	flowWindow     int
	cwnd           int // congestion window in packets, 0 = none
	period         time.Duration
	ccACKPeriod    time.Duration
	ccACKInterval  int
	ccRTO          time.Duration
	pairNext       bool              // the previous packet opened a packet pair: the next leaves at once
	blocked        bool              // Release last stopped with nothing sendable (window, data)
	peerRates      arrival.PeerRates // smoothed receiver estimates from full ACKs (spec §6.3)
	rtoBase        time.Duration
	rtoCount       int
	rtoRepair      seqno.Seq          // the ACK number the last expiry's re-sent first packet alone would give
	rtoRepairing   bool               // rtoRepair is set and no ACK has gone past it yet
	ack            packet.ACK         // scratch for decoding and encoding ACKs
	nakRanges      []packet.SeqRange  // scratch for decoding NAKs
	lossRanges     []congestion.Range // scratch for Controller.OnLoss
	dlv            *deliveryTracker   // the sender's own delivery accounting (delivery.go)

	// Receiver (spec §4.4). rcv holds the window: rcv.ReadSeq() is the first sequence number not
	// yet consumed by Read, rcv.AckSeq() the first missing one (the ACK number), rcv.Cap() the
	// acceptance window (RecvBuffer packets).
	rcv            *buffer.RecvBuffer
	rloss          *losslist.Receiver
	lrsn           seqno.Seq     // largest received sequence number
	rcvLastAck     seqno.Seq     // ACK number of the last full or medium ACK sent
	rcvLastAckAck  seqno.Seq     // largest ACK number confirmed by an ACK2
	lastACKTime    time.Duration // last full or medium ACK sent
	lastFullACK    time.Duration
	ackForce       bool // an ACK is due at once (short packet, controller interval)
	ackRepeats     int  // consecutive timer ACKs carrying the same unconfirmed number
	pktsSinceACK   int
	pktsSinceLight int
	advertised     int // flow window in the last ACK sent
	acks           *rtt.History
	arrivals       *arrival.Estimator
	nakTick        time.Duration // last periodic NAK check
	nak            packet.NAK
	dueRanges      []losslist.Range

	// Shared.
	rtt        rtt.Estimator // UDT4 smoothing, seeded by the first sample (rttSample)
	lastRecv   time.Duration // anything received from the peer
	lastSend   time.Duration // anything sent to the peer
	kaReplied  time.Duration // when we last answered the peer's keep-alive (see keepAliveDue)
	kaTimer    time.Duration // when our keep-alive timer last sent one
	err        error
	peerClosed bool
	closed     bool
	ctrl       []byte // scratch for control packets

	stats Stats
}

// New returns the engine of an established connection; now is the time the connection became
// established. It calls cfg.Controller.Init.
func New(cfg Config, now time.Time) *Endpoint {
	cfg.applyDefaults()
	if cfg.Start.IsZero() {
		cfg.Start = now
	}
	maxRanges := (cfg.MSS - udpIPOverhead - headerSize) / 4
	e := &Endpoint{
		cfg:         cfg,
		start:       cfg.Start,
		cc:          cfg.Controller,
		pktSize:     cfg.MSS - udpIPOverhead,
		payloadSize: packet.MaxPayload(cfg.MSS),
		kaInterval:  min(keepAliveEvery, cfg.IdleTimeout/8),
		flowWindow:  cfg.PeerFlowWindow,
		peerRates:   arrival.NewPeerRates(),
		ctrl:        make([]byte, 0, cfg.MSS-udpIPOverhead),
		nakRanges:   make([]packet.SeqRange, 0, maxRanges),
		lossRanges:  make([]congestion.Range, 0, maxRanges),
		dueRanges:   make([]losslist.Range, 0, maxRanges/2),
	}
	e.nak.Ranges = make([]packet.SeqRange, 0, maxRanges/2)
	e.minPeriod = congestion.MinPeriod(cfg.MaxBandwidth, cfg.MSS)
	t := e.since(now)

	isn, peerISN := seqno.Seq(cfg.ISN), seqno.Seq(cfg.PeerISN)
	e.snd = buffer.NewSendBuffer(cfg.SendBuffer, e.payloadSize, isn)
	e.sloss = losslist.NewSender(isn, cfg.PeerFlowWindow)
	e.sched = pacer.NewScheduler(pacer.SchedulerConfig{Burst: cfg.Burst, Strict: cfg.StrictPacing})
	e.sndLastDataAck = isn
	e.dlv = newDeliveryTracker(isn, e.snd.Cap())
	e.dcc, _ = cfg.Controller.(congestion.DeliveryController)
	e.rtoBase = t

	e.rcv = buffer.NewRecvBuffer(cfg.RecvBuffer, e.payloadSize, peerISN)
	e.rloss = losslist.NewReceiver(cfg.RecvBuffer)
	e.lrsn = peerISN.Dec()
	e.rcvLastAck = peerISN
	e.rcvLastAckAck = peerISN
	e.advertised = cfg.RecvBuffer
	e.arrivals = arrival.New(now)
	e.acks = rtt.NewHistory(ackHistory)

	e.lastRecv, e.lastSend = t, t
	e.kaReplied, e.kaTimer = -1, -1
	e.lastACKTime, e.lastFullACK = t, t

	e.cc.Init(now, congestion.Params{MSS: cfg.MSS, FlowWindow: cfg.PeerFlowWindow, ISN: cfg.ISN})
	e.period = -1 // force the first SetInterval
	e.applyCC()
	return e
}

// since converts now to the engine's clock: time since Config.Start.
func (e *Endpoint) since(now time.Time) time.Duration { return now.Sub(e.start) }

// at converts the engine's clock back to a time.Time.
func (e *Endpoint) at(t time.Duration) time.Time { return e.start.Add(t) }

// timestamp is the 32-bit µs header timestamp (spec §1.2).
func timestamp(t time.Duration) uint32 { return uint32(t / time.Microsecond) }

// applyCC reads the controller's decision (spec §5.5 CCUpdate): the period, clamped by
// MaxBandwidth, goes to the pacing schedule; the window bounds the packets in flight.
func (e *Endpoint) applyCC() {
	st := e.cc.State()
	p := max(st.Period, e.minPeriod, 0)
	if p != e.period {
		e.period = p
		e.sched.SetInterval(p)
		e.sched.SetBurst(burstFor(p, e.cfg.Burst))
	}
	e.cwnd = 0
	if st.Window > 0 {
		e.cwnd = max(int(min(st.Window, maxWindow)), 2)
	}
	e.ccACKPeriod, e.ccACKInterval, e.ccRTO = st.ACKPeriod, st.ACKInterval, st.RTO
}

// Catch-up credit (see burstFor): the time a late pacer may repay back to back, and the floor in
// packets, as quic-go's pacer (2 ms of the rate: MinPacingDelay + TimerGranularity; at least
// 10 packets).
const (
	burstTime    = 2 * time.Millisecond
	minBurstPkts = 10
)

// burstFor returns the pacing schedule's burst cap for packet period p: the packets of
// burstTime at that rate, at least minBurstPkts, at most limit (Config.Burst; 0 means
// pacer.DefaultBurst). A late pacer (a preempted vCPU, a busy core) then sends at most 2 ms of
// its rate at once: a burst of limit packets at 100 Mbit/s would put 5 ms of queue on the
// bottleneck, which delay-based controllers read as congestion and shallow buffers drop.
func burstFor(p time.Duration, limit int) int {
	if limit <= 0 {
		limit = pacer.DefaultBurst
	}
	if p <= 0 {
		return limit
	}
	return min(max(int((burstTime+p-1)/p), minBurstPkts), limit)
}

// PeerIdleError is the error of a connection whose peer sent nothing for IdleTimeout. It is a
// net.Error whose Timeout() is true.
type PeerIdleError struct {
	Idle time.Duration // how long the peer was silent
}

func (e *PeerIdleError) Error() string {
	return fmt.Sprintf("udt: peer unresponsive: nothing received for %v", e.Idle.Round(time.Millisecond))
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
	e.noteAppLimited() // data arriving at an idle sender: what is in flight was app-limited
	n := e.snd.Write(p)
	e.stats.BytesWritten += uint64(n)
	return n
}

// CanWrite reports whether Write would accept at least one byte, or the connection stopped sending
// (so that a blocked writer wakes up and sees Err or PeerClosed).
func (e *Endpoint) CanWrite() bool { return !e.active() || e.snd.Free() > 0 }

// Flushed reports whether everything written has been acknowledged by the peer.
func (e *Endpoint) Flushed() bool { return e.snd.Buffered() == 0 }

// Read copies in-order received bytes into p. It returns (0, nil) when nothing is available yet
// (wait for CanRead), (0, io.EOF) after the peer's Shutdown once all in-order data has been read,
// and (0, Err()) once the connection broke and no data is left.
func (e *Endpoint) Read(p []byte) (int, error) {
	n := e.rcv.Read(p)
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
func (e *Endpoint) CanRead() bool { return e.rcv.Readable() > 0 || e.peerClosed || e.err != nil }

// Shutdown sends the Shutdown control packet (spec §3.4) once; afterwards the endpoint sends
// nothing more and ignores incoming packets except the peer's Shutdown, which still sets
// PeerClosed (conn waits for it to know that its own Shutdown arrived). conn calls it after the
// linger.
func (e *Endpoint) Shutdown(now time.Time) {
	if e.closed {
		return
	}
	if e.err == nil && !e.peerClosed {
		e.sendShutdown(e.since(now))
	}
	e.closed = true
}

// HandlePacket processes one datagram addressed to this connection. b is used only during the
// call. Malformed, forged and out-of-window packets are dropped and counted in Stats().Drops.
func (e *Endpoint) HandlePacket(now time.Time, b []byte) {
	if !e.active() {
		if e.closed && !e.peerClosed && len(b) >= headerSize && be.Uint32(b[12:]) == e.cfg.LocalID {
			if typ, err := packet.Type(b); err == nil && typ == packet.TypeShutdown {
				e.peerClosed = true // the answer to our Shutdown
			}
		}
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
	if !packet.IsControl(b) {
		e.onData(t, now, b)
	} else {
		e.onControl(t, now, b)
	}
	if e.active() {
		e.checkACK(t, now)
	}
}

func (e *Endpoint) onControl(t time.Duration, now time.Time, b []byte) {
	if (len(b)-headerSize)%4 != 0 {
		e.stats.Drops.Malformed++
		return
	}
	info := be.Uint32(b[4:])
	switch typ, _ := packet.Type(b); typ {
	case packet.TypeKeepAlive:
		e.stats.KeepAliveRecv++
		e.answerKeepAlive(t)
	case packet.TypeACK:
		if !e.onACK(t, now, b) {
			return
		}
	case packet.TypeNAK:
		if !e.onNAK(now, b) {
			return
		}
	case packet.TypeACK2:
		e.onACK2(now, info)
	case packet.TypeShutdown:
		// Answer with our own Shutdown. UDT4 sends one Shutdown and never repeats it (spec §3.4),
		// so a burst of loss leaves its peer waiting for the idle timeout; the answer lets a
		// closing peer of ours re-send until it knows its Shutdown arrived. A UDT4 peer, already
		// closing, ignores it. One answer per Shutdown received: no amplification.
		e.peerClosed = true
		e.sendShutdown(t)
	case packet.TypeErrorSignal:
		e.err = &PeerError{Code: info}
	default:
		// Handshake repeats are conn's business; congestion warnings (never sent by UDT4),
		// message-drop requests (message mode only) and user-defined packets are not used by a
		// stream connection.
		e.stats.Drops.IgnoredCtrl++
	}
	e.lastRecv = t
}
