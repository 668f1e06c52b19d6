package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// alpn is the TLS application protocol udtperf's quic connections negotiate.
const alpn = "udtperf"

func quicConfig(tr *transportFlags) *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout: tr.handshake,
		MaxIdleTimeout:       tr.idle,
		KeepAlivePeriod:      tr.idle / 3,
	}
}

// serverTLS makes a fresh self-signed ECDSA P-256 certificate (valid 48 h) and returns the
// server's TLS config and the certificate's SHA-256 fingerprint.
func serverTLS() (*tls.Config, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "udtperf"},
		DNSNames:     []string{"udtperf", "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(der)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{alpn},
		MinVersion:   tls.VersionTLS13,
	}, hex.EncodeToString(sum[:]), nil
}

// quicFingerprint is the SHA-256 of the last certificate a quic listener made (the server
// prints it).
var quicFingerprint atomic.Pointer[string]

// clientTLS accepts the server's self-signed certificate: udtperf measures throughput, it does
// not authenticate its peer (the server prints its certificate's fingerprint for the curious).
func clientTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}
}

// newQUICTransport opens a UDP socket and a quic.Transport on it. udtperf owns both so that
// Close can wait until quic-go's goroutines are gone (quic.DialAddr and quic.ListenAddr close
// their transports in the background). quic-go uses GSO, GRO and ECN on the *net.UDPConn.
func newQUICTransport(laddr *net.UDPAddr) (*quic.Transport, error) {
	udp, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	return &quic.Transport{Conn: udp}, nil
}

// closeQUICTransport stops t (waiting for its reader) and closes its socket.
func closeQUICTransport(t *quic.Transport) {
	t.Close()
	t.Conn.Close()
}

func dialQUIC(ctx context.Context, addr string, tr *transportFlags) (transportConn, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	t, err := newQUICTransport(&net.UDPAddr{})
	if err != nil {
		return nil, err
	}
	c, err := t.Dial(ctx, raddr, clientTLS(), quicConfig(tr))
	if err != nil {
		closeQUICTransport(t)
		return nil, err
	}
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		c.CloseWithError(1, "no stream")
		closeQUICTransport(t)
		return nil, err
	}
	return &quicConn{c: c, s: s, t: t}, nil
}

type quicListener struct {
	l *quic.Listener
	t *quic.Transport
}

func listenQUIC(addr string, tr *transportFlags) (transportListener, error) {
	tlsConf, fp, err := serverTLS()
	if err != nil {
		return nil, err
	}
	quicFingerprint.Store(&fp)
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	t, err := newQUICTransport(laddr)
	if err != nil {
		return nil, err
	}
	l, err := t.Listen(tlsConf, quicConfig(tr))
	if err != nil {
		closeQUICTransport(t)
		return nil, err
	}
	return quicListener{l, t}, nil
}

func (l quicListener) Accept(ctx context.Context) (transportConn, error) {
	for {
		c, err := l.l.Accept(ctx)
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := c.AcceptStream(sctx)
		cancel()
		if err != nil { // a client that never opened its stream: drop it, keep serving
			c.CloseWithError(1, "no stream")
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		return &quicConn{c: c, s: s}, nil
	}
}

func (l quicListener) Addr() net.Addr { return l.l.Addr() }

// Close stops accepting; connections in progress are closed by their owners first (the server
// does), or end abruptly here.
func (l quicListener) Close() error {
	err := l.l.Close()
	closeQUICTransport(l.t)
	return err
}

// quicConn is one bidirectional stream of a quic connection.
type quicConn struct {
	c    *quic.Conn
	s    *quic.Stream
	t    *quic.Transport // the client's own transport, closed with the connection; nil on the server
	done sync.Once       // closes t
}

func (q *quicConn) Read(p []byte) (int, error)        { return q.s.Read(p) }
func (q *quicConn) Write(p []byte) (int, error)       { return q.s.Write(p) }
func (q *quicConn) SetReadDeadline(t time.Time) error { return q.s.SetReadDeadline(t) }
func (q *quicConn) Backend() string                   { return "" }
func (q *quicConn) RemoteAddr() net.Addr              { return q.c.RemoteAddr() }

func (q *quicConn) Close() error {
	q.s.Close()
	err := q.c.CloseWithError(0, "")
	q.closeTransport()
	return err
}

// quicAborted is the application error code of an aborted transfer.
const quicAborted = 1

// Abort closes the connection with an application error, which the peer sees at once.
func (q *quicConn) Abort() error {
	err := q.c.CloseWithError(quicAborted, "transfer aborted")
	q.closeTransport()
	return err
}

// closeTransport closes the client's own transport once the connection's closing period is
// over. quic-go sends CONNECTION_CLOSE once and, for its closing period, sends it again when the
// peer's packets show it was lost (RFC 9000 §10.2.1), but only while its transport is open:
// closing the socket at once left a peer that missed the one copy (a full receive buffer) waiting
// for its idle timeout. The period scales with the RTT, so a peer slowed by a loaded host, whose
// slowness shows in the RTT samples, gets a longer one; a peer silent for longer than that still
// waits out its idle timeout. A connection the peer closed first has nothing to repeat. Abort and
// Close may run concurrently (an interrupt): the second waits for the first.
func (q *quicConn) closeTransport() {
	if q.t == nil {
		return
	}
	q.done.Do(func() {
		var app *quic.ApplicationError
		if !errors.As(context.Cause(q.c.Context()), &app) || !app.Remote {
			time.Sleep(closingPeriod(q.c.ConnectionStats()))
		}
		closeQUICTransport(q.t)
	})
}

// closingPeriod is how long quic-go keeps answering a closed connection's peer (RFC 9000 §10.2:
// three PTOs): quic-go v0.65 takes 3 × (smoothed RTT + max(4·RTTVAR, 1 ms granularity)), RFC 9002
// §6.2.1's PTO without max_ack_delay; a longer wait would buy nothing.
func closingPeriod(st quic.ConnectionStats) time.Duration {
	return 3 * (st.SmoothedRTT + max(4*st.MeanDeviation, time.Millisecond))
}

func (q *quicConn) Stats(sender bool) linkStats {
	st := q.c.ConnectionStats()
	s := unknownStats()
	s.rttMs = float64(st.SmoothedRTT) / 1e6
	if sender {
		s.pktSent = float64(st.PacketsSent)
		s.pktRetrans = float64(st.PacketsLost)
		s.lost = float64(st.PacketsLost)
		s.cwndBytes = float64(st.CongestionWindow)
	}
	return s
}

// quicErrorText explains quic-go's errors, or returns "".
func quicErrorText(err error, proto, peer string, tr *transportFlags) string {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	var app *quic.ApplicationError
	switch {
	case errors.As(err, &hs):
		return fmt.Sprintf("no %s server answers at %s (no handshake within %v)", proto, peer, tr.handshake)
	case errors.As(err, &idle):
		return fmt.Sprintf("connection to %s lost: nothing heard from the peer for %v (-idle-timeout: the peer was killed, or the path is down)", peer, tr.idle)
	case errors.As(err, &app) && app.Remote:
		return fmt.Sprintf("connection to %s closed by the peer in mid-transfer", peer)
	}
	return ""
}
