package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/udtgo/udt/conn"
)

// transportConn is one transfer's byte stream over udt, tcp or quic.
type transportConn interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	SetReadDeadline(t time.Time) error
	RemoteAddr() net.Addr
	// Close releases the connection. udtperf's protocol has confirmed delivery end to end
	// before either end closes (see wire.go), so no transport needs to linger: udt sends
	// Shutdown at once, tcp closes gracefully, quic closes at once.
	Close() error
	// Abort closes the connection so that the peer learns at once that the transfer was cut
	// short (udt: Shutdown; tcp: a reset; quic: an application error).
	Abort() error
	// Stats samples the transport's counters; sender tells which side this end plays.
	Stats(sender bool) linkStats
	// Backend is the udt pacer backend; "" for tcp and quic.
	Backend() string
}

// transportListener accepts transportConns.
type transportListener interface {
	Accept(ctx context.Context) (transportConn, error)
	Addr() net.Addr
	Close() error
}

// linkStats are transport counters in report units; NaN means not available.
type linkStats struct {
	rttMs        float64
	pktSent      float64 // packets sent, retransmissions included
	pktRetrans   float64 // packets retransmitted (quic: declared lost, whose data is sent again)
	lost         float64 // sender: losses reported by the peer; receiver: gaps detected
	cwndPkts     float64 // congestion window in packets (udt, tcp)
	cwndBytes    float64 // congestion window in bytes (quic)
	sendPeriodUs float64 // udt's inter-packet period
	pktsPerWake  float64 // udt: mean packets per pacer wake (sender)
}

func unknownStats() linkStats {
	n := math.NaN()
	return linkStats{n, n, n, n, n, n, n, n}
}

func (s linkStats) retransPct() float64 {
	if math.IsNaN(s.pktSent) || math.IsNaN(s.pktRetrans) || s.pktSent == 0 {
		return math.NaN()
	}
	return 100 * s.pktRetrans / s.pktSent
}

// dialTransport connects to a server speaking proto.
func dialTransport(ctx context.Context, proto, addr string, tr *transportFlags) (transportConn, error) {
	ctx, cancel := context.WithTimeout(ctx, tr.handshake)
	defer cancel()
	switch proto {
	case "udt":
		c, err := conn.DialContext(ctx, "udp", addr, udtConfig(tr))
		if err != nil {
			return nil, err
		}
		return &udtConn{c, udtSendBuffer(tr.mss)}, nil
	case "tcp":
		d := net.Dialer{Control: tcpSocketControl(tr.tcpCC)}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return newTCPConn(c.(*net.TCPConn), tr.idle), nil
	case "quic":
		return dialQUIC(ctx, addr, tr)
	}
	return nil, fmt.Errorf("unknown protocol %q", proto)
}

// listenTransport opens a listener for proto.
func listenTransport(proto, addr string, tr *transportFlags) (transportListener, error) {
	switch proto {
	case "udt":
		l, err := conn.Listen("udp", addr, udtConfig(tr))
		if err != nil {
			return nil, err
		}
		return udtListener{l, udtSendBuffer(tr.mss)}, nil
	case "tcp":
		lc := net.ListenConfig{Control: tcpSocketControl(tr.tcpCC)}
		l, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			return nil, err
		}
		return tcpListener{l.(*net.TCPListener), tr.idle}, nil
	case "quic":
		return listenQUIC(addr, tr)
	}
	return nil, fmt.Errorf("unknown protocol %q", proto)
}

func udtConfig(tr *transportFlags) *conn.Config {
	return &conn.Config{
		MSS:              tr.mss,
		SendBuffer:       udtSendBuffer(tr.mss),
		Pacer:            tr.pacer,
		StrictPacing:     tr.strict,
		PacingTolerance:  time.Duration(tr.tolerance),
		Congestion:       tr.ccFactory,
		HandshakeTimeout: tr.handshake,
		IdleTimeout:      tr.idle,
		MessageMode:      tr.message,
		Linger:           -1, // delivery is confirmed by udtperf's own protocol (see transportConn.Close)
		Tracer:           tr.tracer,
	}
}

// udtSendBuffer is conn's default send buffer (8192 packets' payload), set explicitly so that
// the backlog can be computed from SendBufferFree.
func udtSendBuffer(mss int) int { return conn.DefaultBufferPackets * (mss - 44) }

// udtConn is a udt connection.
type udtConn struct {
	*conn.Conn
	sndBuf int // Config.SendBuffer, bytes
}

// backlog is how many written bytes wait in the send buffer (not yet acknowledged).
func (c *udtConn) backlog() int64 {
	st := c.Conn.Stats()
	return int64(max(c.sndBuf-st.SendBufferFree, 0))
}

func (c *udtConn) Backend() string { return c.PacerName() }

func (c *udtConn) Abort() error { return c.Conn.Close() } // Linger −1: Shutdown at once

// Close sends Shutdown at once (Linger −1: udtperf's protocol confirmed delivery) and waits
// until the connection is over (its Shutdown answered, ≈ 0.2 s at most), since conn's Close
// returns before that: the trace then ends with the connection's Closed event, and the process
// may exit.
func (c *udtConn) Close() error {
	c.Conn.CloseContext(context.Background()) // an unacknowledged last message is no error here
	return nil
}

func (c *udtConn) Stats(sender bool) linkStats {
	st := c.Conn.Stats()
	s := unknownStats()
	s.rttMs = float64(st.RTT) / 1e6
	s.pktSent = float64(st.PktSent)
	s.pktRetrans = float64(st.PktRetrans)
	s.lost = float64(st.PktRcvLoss)
	if sender {
		s.lost = float64(st.PktSndLoss)
		if st.CongestionWindow > 0 {
			s.cwndPkts = float64(st.CongestionWindow)
		}
		s.sendPeriodUs = float64(st.SendPeriod) / 1e3
		if ps := c.PacerStats(); ps.PacketsPerWake.Count > 0 {
			s.pktsPerWake = ps.PacketsPerWake.Mean
		}
	}
	return s
}

type udtListener struct {
	l      *conn.Listener
	sndBuf int
}

func (l udtListener) Accept(ctx context.Context) (transportConn, error) {
	c, err := l.l.AcceptUDT(ctx)
	if err != nil {
		return nil, err
	}
	return &udtConn{c, l.sndBuf}, nil
}
func (l udtListener) Addr() net.Addr { return l.l.Addr() }
func (l udtListener) Close() error   { return l.l.Close() }

// tcpConn is a TCP connection whose peer is declared dead by the kernel after -idle-timeout
// without an answer (setDeadPeerTimeout); reads honour only explicit deadlines. Where the kernel
// cannot do that (writeIdle > 0), a write that makes no progress for writeIdle fails instead.
type tcpConn struct {
	*net.TCPConn
	writeIdle time.Duration
}

func newTCPConn(c *net.TCPConn, idle time.Duration) *tcpConn {
	return &tcpConn{TCPConn: c, writeIdle: setDeadPeerTimeout(c, idle)}
}

func (c *tcpConn) Write(p []byte) (int, error) {
	if c.writeIdle > 0 {
		c.TCPConn.SetWriteDeadline(time.Now().Add(c.writeIdle))
	}
	return c.TCPConn.Write(p)
}

func (c *tcpConn) Backend() string { return "" }

// Abort resets the connection (SO_LINGER 0): the peer's next read or write fails at once.
func (c *tcpConn) Abort() error {
	c.TCPConn.SetLinger(0)
	return c.TCPConn.Close()
}

func (c *tcpConn) Stats(sender bool) linkStats { return tcpStats(c.TCPConn, sender) }

type tcpListener struct {
	l    *net.TCPListener
	idle time.Duration
}

func (l tcpListener) Accept(ctx context.Context) (transportConn, error) {
	c, err := l.l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	return newTCPConn(c, l.idle), nil
}
func (l tcpListener) Addr() net.Addr { return l.l.Addr() }
func (l tcpListener) Close() error   { return l.l.Close() }

// describeNetError turns a transport error into words a user acts on; dialing tells whether
// the connection was being set up.
func describeNetError(err error, proto, peer string, tr *transportFlags, dialing bool) string {
	var ne net.Error
	timeout := errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
	switch {
	case errors.Is(err, conn.ErrHandshakeTimeout), dialing && timeout:
		return fmt.Sprintf("no %s server answers at %s (no handshake within %v)", proto, peer, tr.handshake)
	case errors.Is(err, conn.ErrPeerShutdown), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Sprintf("connection to %s closed by the peer in mid-transfer", peer)
	case errors.Is(err, syscall.ECONNREFUSED) && dialing: // udt too: the host's ICMP port unreachable
		return fmt.Sprintf("no %s server at %s (connection refused)", proto, peer)
	}
	if s := quicErrorText(err, proto, peer, tr); s != "" {
		return s
	}
	if timeout && errors.Is(err, syscall.ECONNREFUSED) { // udt: the peer's host reported port unreachable
		return fmt.Sprintf("connection to %s lost: its host reported port unreachable and nothing came from the peer since (the peer was killed)", peer)
	}
	if timeout { // udt's dead-peer detection, tcp's idle deadline
		return fmt.Sprintf("connection to %s lost: nothing heard from the peer for %v (-idle-timeout: the peer was killed, or the path is down)", peer, tr.idle)
	}
	return fmt.Sprintf("%s connection to %s: %v", proto, peer, err)
}
