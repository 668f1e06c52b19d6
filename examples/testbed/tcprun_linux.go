//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TCPResult is one bulk TCP transfer from A to B.
type TCPResult struct {
	CC          string        // congestion control algorithm (tcp_congestion)
	Bytes       int64         // bytes received by B
	Goodput     float64       // bit/s of payload at B after the warm-up
	RetransPct  float64       // retransmitted bytes / sent bytes × 100 (tcp_info)
	SRTT        time.Duration // sender's smoothed RTT at the end (tcp_info)
	SHA256OK    bool          // B's SHA-256 of the stream equals A's
	MeasuredFor time.Duration // interval Goodput covers
	MSS         int           // sender's MSS, bytes (payload per full-size packet)
}

// tcpPort is the port of the built-in TCP receiver on B.
const tcpPort = 5201

// RunTCP sends a pseudo-random stream from A to B over TCP with congestion
// control cc for dur, then closes. Goodput counts what B receives after the
// first warmup (slow start and its overshoot) until the end of the stream.
// Both ends hash the stream with SHA-256. A window > 0 clamps B's advertised
// window to that many bytes (TCP_WINDOW_CLAMP).
func RunTCP(ctx context.Context, tb *Testbed, cc string, dur, warmup time.Duration, window int) (TCPResult, error) {
	res := TCPResult{CC: cc}
	var ln net.Listener
	laddr := netip.AddrPortFrom(tb.Addr(HostB), tcpPort).String()
	lc := net.ListenConfig{}
	if window > 0 {
		// Set on the listener, inherited by the accepted connection before
		// its first window is advertised.
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP, window)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	if err := inNS(tb.NS(HostB), func() (err error) {
		ln, err = lc.Listen(ctx, "tcp4", laddr)
		return err
	}); err != nil {
		return res, err
	}
	defer ln.Close()

	type recvResult struct {
		bytes    int64
		goodput  float64
		measured time.Duration
		sum      [32]byte
		err      error
	}
	rc := make(chan recvResult, 1)
	go func() {
		var r recvResult
		c, err := ln.Accept()
		if err != nil {
			r.err = err
			rc <- r
			return
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		h := sha256.New()
		buf := make([]byte, 256<<10)
		var first, mark time.Time
		var markBytes int64
		for {
			n, err := c.Read(buf)
			if n > 0 {
				now := time.Now()
				if first.IsZero() {
					first = now
				}
				h.Write(buf[:n])
				r.bytes += int64(n)
				if mark.IsZero() && now.Sub(first) >= warmup {
					mark, markBytes = now, r.bytes
				}
			}
			if errors.Is(err, io.EOF) {
				now := time.Now()
				if mark.IsZero() { // shorter than the warm-up: use it all
					mark, markBytes = first, 0
				}
				r.measured = now.Sub(mark)
				if r.measured > 0 {
					r.goodput = float64(r.bytes-markBytes) * 8 / r.measured.Seconds()
				}
				break
			}
			if err != nil {
				r.err = fmt.Errorf("tcp receive: %w", err)
				break
			}
		}
		copy(r.sum[:], h.Sum(nil))
		rc <- r
	}()

	var conn *net.TCPConn
	d := net.Dialer{
		LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(tb.Addr(HostA), 0)),
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
			}); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("TCP_CONGESTION %s: %w (see net.ipv4.tcp_available_congestion_control; modprobe tcp_%s)", cc, serr, cc)
			}
			return nil
		},
	}
	if err := inNS(tb.NS(HostA), func() error {
		c, err := d.DialContext(ctx, "tcp4", laddr)
		if err == nil {
			conn = c.(*net.TCPConn)
		}
		return err
	}); err != nil {
		ln.Close()
		<-rc
		return res, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	block := make([]byte, 1<<20)
	_, _ = rand.Read(block)
	h := sha256.New()
	end := time.Now().Add(dur)
	var werr error
	for time.Now().Before(end) {
		n, err := conn.Write(block)
		h.Write(block[:n])
		if err != nil {
			werr = fmt.Errorf("tcp send: %w", err)
			break
		}
	}
	if werr == nil {
		werr = conn.CloseWrite()
	}
	r := <-rc
	if info, err := tcpInfo(conn); err == nil {
		if info.Bytes_sent > 0 {
			res.RetransPct = float64(info.Bytes_retrans) / float64(info.Bytes_sent) * 100
		}
		res.SRTT = time.Duration(info.Rtt) * time.Microsecond
		res.MSS = int(info.Snd_mss)
	}
	if werr != nil {
		return res, werr
	}
	if r.err != nil {
		return res, r.err
	}
	res.Bytes, res.Goodput, res.MeasuredFor = r.bytes, r.goodput, r.measured
	res.SHA256OK = bytes.Equal(r.sum[:], h.Sum(nil))
	return res, nil
}

func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return nil, err
	}
	return info, ierr
}
