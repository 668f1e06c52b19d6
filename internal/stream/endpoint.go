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
	pairs          bool              // the controller wants packet pairs (wantsPairs)
	blocked        bool              // Release last stopped with nothing sendable (window, data)
	peerRates      arrival.PeerRates // smoothed receiver estimates from full ACKs (spec §6.3)
	rtoBase        time.Duration
	rtoCount       int
	rtoRepair      seqno.Seq          // the ACK number the last expiry's re-sent first packet alone would give
	rtoRepairing   bool               // rtoRepair is set and no ACK has gone past it yet
	rtoGoBack      bool               // a retransmission timeout passed: go back N when the peer answers
	awaitingPeer   bool               // the timer expired and nothing has been heard since: no new data
	sent           sentLog            // send times of the packets in flight (sentlog.go)
	sro            sndReorder         // the sender's reordering window and deferred losses (reorder.go)
	sndPaused      bool               // Release stopped with no data written (applimit.go)
	pauseSet       bool               // pauseSeq is set
	pauseSeq       seqno.Seq          // the first packet sent after the last such pause
	rateMeasured   [2]bool            // the peer's receive rate, capacity: a measurement was folded in
	ack            packet.ACK         // scratch for decoding and encoding ACKs
	nakRanges      []packet.SeqRange  // scratch for decoding NAKs
	lossRanges     []congestion.Range // scratch for Controller.OnLoss
	dlv            *deliveryTracker   // the sender's own delivery accounting (delivery.go)

	// Receiver (spec §4.4). rcv holds the window: rcv.ReadSeq() is the first sequence number not
	// yet consumed by Read, rcv.AckSeq() the first missing one (the ACK number), rcv.Cap() the
	// acceptance window (RecvBuffer packets).
	rcv             *buffer.RecvBuffer
	rloss           *losslist.Receiver
	lrsn            seqno.Seq     // largest received sequence number
	rcvLastAck      seqno.Seq     // ACK number of the last full or medium ACK sent
	rcvLastAckAck   seqno.Seq     // largest ACK number confirmed by an ACK2
	lastACKTime     time.Duration // last full or medium ACK sent
	lastData        time.Duration // last data packet received (the timer ACK's fallback, ackDue)
	lastFullACK     time.Duration
	ackForce        bool // an ACK is due at once (short packet, controller interval)
	rcvLastLen      int  // payload bytes of the last data packet received (a shorter one forces an ACK)
	ackRepeats      int  // consecutive timer ACKs carrying the same unconfirmed number
	pktsSinceACK    int
	pktsSinceLight  int
	advertised      int // flow window in the last ACK sent
	acks            *rtt.History
	arrivals        *arrival.Estimator
	nakTick         time.Duration // last periodic NAK check
	lastPeriodicNAK time.Duration // last periodic NAK sent
	nak             packet.NAK
	dueRanges       []losslist.Range
	rro             rcvReorder // the receiver's reordering window (reorder.go)
	msgs            msgState   // message mode (message.go)

	// Shared.
	rtt        rtt.Estimator // UDT4 smoothing, seeded by the first sample (rttSample)
	lastRecv   time.Duration // anything received from the peer
	lastSend   time.Duration // anything sent to the peer
	kaReplied  time.Duration // when we last answered the peer's keep-alive (see keepAliveDue)
	kaTimer    time.Duration // when our keep-alive timer last sent one
	unreachAt  time.Duration // first port-unreachable report since lastRecv, −1 none (unreachable.go)
	pmtu       pmtud         // packet size and path MTU discovery (pmtud.go)
	err        error
	peerClosed bool
	closed     bool       // no more packets are sent (Shutdown sent, or Close found the connection stopped)
	ctrl       []byte     // scratch for control packets
	ctrlq      ctrlQueue  // control packets waiting for conn (PopControl)
	cl         closeState // Close's progress (close.go)

	stats Stats
	tr    tracing // Config.Tracer (trace.go)
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
	// A NAK must fit a packet of the base size: the reverse path's MTU is not discovered.
	e.nak.Ranges = make([]packet.SeqRange, 0, nakRangesFor(cfg))
	e.minPeriod = congestion.MinPeriod(cfg.MaxBandwidth, cfg.MSS)
	t := e.since(now)

	isn, peerISN := seqno.Seq(cfg.ISN), seqno.Seq(cfg.PeerISN)
	if cfg.Messages {
		e.snd = buffer.NewMessageSendBuffer(cfg.SendBuffer, e.payloadSize, isn)
	} else {
		e.snd = newSendBuffer(cfg, e.payloadSize, isn)
	}
	e.initPMTU(cfg.PathMTU)
	e.sloss = losslist.NewSender(isn, cfg.PeerFlowWindow)
	e.sched = pacer.NewScheduler(pacer.SchedulerConfig{Strict: cfg.StrictPacing, Tolerance: cfg.PacingTolerance})
	e.sndLastDataAck = isn
	e.sent = newSentLog(isn, e.snd.Cap())
	e.dlv = newDeliveryTracker(isn, e.snd.Cap())
	e.dcc, _ = cfg.Controller.(congestion.DeliveryController)
	e.pairs = wantsPairs(cfg.Controller)
	e.rtoBase = t

	if cfg.Messages {
		e.rcv = buffer.NewMessageRecvBuffer(cfg.RecvBuffer, e.payloadSize, peerISN)
	} else {
		e.rcv = buffer.NewRecvBuffer(cfg.RecvBuffer, e.payloadSize, peerISN)
	}
	e.rloss = losslist.NewReceiver(cfg.RecvBuffer)
	e.lrsn = peerISN.Dec()
	e.rcvLastAck = peerISN
	e.rcvLastAckAck = peerISN
	e.advertised = cfg.RecvBuffer
	e.rcvLastLen = e.payloadSize // the first packet is short if it is not full-size, as in UDT4
	e.arrivals = arrival.New(now)
	e.acks = rtt.NewHistory(ackHistory)

	e.lastRecv, e.lastSend = t, t
	e.sndPaused = true // nothing written yet: the first packet follows a pause (applimit.go)
	e.kaReplied, e.kaTimer, e.unreachAt = -1, -1, -1
	e.lastACKTime, e.lastFullACK = t, t

	e.tr = newTracing(&cfg)
	e.cc.Init(now, congestion.Params{MSS: cfg.MSS, FlowWindow: cfg.PeerFlowWindow, ISN: cfg.ISN, RTT: max(cfg.HandshakeRTT, 0)})
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
		e.sched.SetInterval(p) // the catch-up burst follows it (pacer.BurstFor)
	}
	e.cwnd = 0
	if st.Window > 0 {
		e.cwnd = max(int(min(st.Window, maxWindow)), 2)
	}
	e.dlv.implyLimit = 2 * e.cwnd // silence stands for at most two windows of arrivals (implyCapped)
	e.ccACKPeriod, e.ccACKInterval, e.ccRTO = st.ACKPeriod, st.ACKInterval, st.RTO
	e.traceCC()
}

// PeerIdleError is the error of a connection whose peer sent nothing for IdleTimeout. It is a
// net.Error whose Timeout() is true.
type PeerIdleError struct {
	Idle    time.Duration // how long the peer was silent
	Refused bool          // a port-unreachable report came since the peer was last heard from (unreachable.go)
}

func (e *PeerIdleError) Error() string {
	return fmt.Sprintf("peer unresponsive: nothing received for %v%s", e.Idle.Round(time.Millisecond), e.refusedText())
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

func (e *PeerError) Error() string { return fmt.Sprintf("peer reported error %d", e.Code) }

// Err returns nil while the connection works, a *PeerIdleError once the peer stayed silent for
// IdleTimeout, or a *PeerError after the peer's error signal. A peer's Shutdown is not an error:
// see PeerClosed and Read.
func (e *Endpoint) Err() error { return e.err }

// PeerClosed reports whether the peer sent Shutdown. Nothing more is sent afterwards; Read returns
// the remaining in-order data and then io.EOF (or a *TruncatedError), Write returns 0.
func (e *Endpoint) PeerClosed() bool { return e.peerClosed }

// active reports whether the connection still exchanges packets.
func (e *Endpoint) active() bool { return !e.closed && e.err == nil && !e.peerClosed }

// Write copies as much of p as fits into the send buffer and returns the count; 0 means the buffer
// is full (wait for CanWrite) or the connection no longer sends (check Err and PeerClosed), or
// Close was called.
func (e *Endpoint) Write(p []byte) int {
	if !e.active() || e.cl.closing {
		return 0
	}
	e.noteAppLimited() // data arriving at an idle sender: what is in flight was app-limited
	n := e.snd.Write(p)
	e.stats.BytesWritten += uint64(n)
	return n
}

// CanWrite reports whether Write would accept at least one byte (in message mode: whether the
// message WriteMessage last refused would fit now), or the connection stopped sending (so that a
// blocked writer wakes up and sees Err or PeerClosed).
func (e *Endpoint) CanWrite() bool { return !e.active() || e.snd.Free() >= max(e.msgs.want, 1) }

// Flushed reports whether everything written has been acknowledged by the peer, by a full or
// medium ACK: a light ACK frees the send buffer here, but a UDT4 receiver makes data readable
// only when it sends a full or medium ACK (CRcvBuffer::ackData in core.cpp's sendCtrl), so data
// acknowledged only by a light ACK would be lost if Close's Shutdown followed at once.
func (e *Endpoint) Flushed() bool {
	return e.snd.Buffered() == 0 && e.sndLastDataAck == e.snd.NextSeq()
}

// Read copies in-order received bytes into p. It returns (0, nil) when nothing is available yet
// (wait for CanRead), (0, io.EOF) after the peer's Shutdown once all in-order data has been read
// (a *TruncatedError instead if data after a gap had arrived), and (0, Err()) once the
// connection broke and no data is left.
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
		if err := e.truncated(); err != nil {
			return 0, err
		}
		return 0, io.EOF
	}
	return 0, nil
}

// TruncatedError is Read's error, in place of io.EOF, when the peer shut down while this side
// knew of data it never received: packets after a gap had arrived. A close sends Shutdown only
// once everything written was acknowledged (spec §3.4) unless its linger passed or it had none,
// so a gap at Shutdown means the peer gave up delivering. A lost tail, with nothing received
// after it, leaves no gap and reads as io.EOF: only the writer's side can know (conn's
// CloseContext). It matches io.ErrUnexpectedEOF (errors.Is). Stream mode only: in message mode
// a message whose TTL expired is meant to be missing. Like a forged Shutdown (which can end any
// connection, spec §3.4: UDT has no authentication), a forged data packet past the end of the
// stream turns a clean end into this error.
type TruncatedError struct {
	First seqno.Seq // the first missing packet: every byte before it was delivered
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("udt: the peer shut down with data undelivered: packet %d never arrived, and what came after it cannot be read (its close gave up)", uint32(e.First))
}

func (e *TruncatedError) Unwrap() error { return io.ErrUnexpectedEOF }

// truncated returns a *TruncatedError if, in stream mode, packets beyond the first missing
// one were received (the largest received number is at or past it).
func (e *Endpoint) truncated() error {
	if e.cfg.Messages {
		return nil
	}
	if first := e.rcv.AckSeq(); seqno.Offset(first, e.lrsn) >= 0 {
		return &TruncatedError{First: first}
	}
	return nil
}

// CanRead reports whether Read would return data or an error (EOF included).
func (e *Endpoint) CanRead() bool { return e.rcv.Readable() > 0 || e.peerClosed || e.err != nil }

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
	e.traceAt(now)
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
		e.checkACK(t, now, !packet.IsControl(b))
		e.checkPendingNAK(t, now)
		e.checkDeferred(t, now)
	}
	e.settle(t)
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
	case packet.TypeMsgDropRequest:
		if !e.onMsgDrop(b) {
			return
		}
	default:
		// Handshake repeats are conn's business; congestion warnings (never sent by UDT4),
		// message-drop requests (message mode only) and user-defined packets are not used by a
		// stream connection.
		e.stats.Drops.IgnoredCtrl++
	}
	e.lastRecv = t
}
