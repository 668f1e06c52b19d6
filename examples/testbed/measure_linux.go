//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PingRTT pings B from A count times and returns the median and mean RTT of
// the replies and how many came back. It needs ping (iputils-ping).
func PingRTT(ctx context.Context, tb *Testbed, count int) (median, mean time.Duration, replies int, err error) {
	// -i 0.05: 20 per second; -W: wait for late replies; -n: no DNS.
	wait := strconv.Itoa(int(math.Ceil((tb.RTT + 2*time.Second).Seconds())))
	cmd := tb.Command(ctx, HostA, "ping", "-n", "-c", strconv.Itoa(count), "-i", "0.05", "-W", wait, tb.Addr(HostB).String())
	out, err := cmd.Output()
	var rtts []time.Duration
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		_, after, ok := strings.Cut(sc.Text(), " time=")
		if !ok {
			continue
		}
		f := strings.Fields(after)
		if len(f) < 1 {
			continue
		}
		ms, perr := strconv.ParseFloat(f[0], 64)
		if perr == nil {
			rtts = append(rtts, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	if len(rtts) == 0 {
		if err == nil {
			err = fmt.Errorf("ping: no replies")
		}
		return 0, 0, 0, fmt.Errorf("ping %s from A: %w", tb.Addr(HostB), err)
	}
	slices.Sort(rtts)
	var sum time.Duration
	for _, r := range rtts {
		sum += r
	}
	return rtts[len(rtts)/2], sum / time.Duration(len(rtts)), len(rtts), nil
}

// probePort is the UDP port of the loss probe's sink on B.
const probePort = 5301

// probeSize is the UDP payload of a loss probe, bytes.
const probeSize = 64

// ProbeLoss sends n numbered UDP probes from A to B at pps per second and
// returns the fraction in percent that B did not receive (one direction) and
// how many arrived after a higher-numbered one (the path must not reorder).
func ProbeLoss(ctx context.Context, tb *Testbed, n, pps int) (lossPct float64, reordered int, err error) {
	var sink *net.UDPConn
	laddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(tb.Addr(HostB), probePort))
	if err := inNS(tb.NS(HostB), func() (err error) {
		sink, err = net.ListenUDP("udp4", laddr)
		return err
	}); err != nil {
		return 0, 0, err
	}
	defer sink.Close()
	forceBuffer(sink, unix.SO_RCVBUFFORCE, 8<<20)

	type counts struct{ recv, reordered int }
	got := make(chan counts, 1)
	go func() {
		seen := make([]bool, n)
		var c counts
		last := -1
		buf := make([]byte, 2048)
		for {
			m, err := sink.Read(buf)
			if err != nil {
				break // deadline after the last probe, or closed
			}
			if m >= 4 {
				if i := int(binary.BigEndian.Uint32(buf)); i < n && !seen[i] {
					seen[i] = true
					c.recv++
					if i < last {
						c.reordered++
					}
					last = max(last, i)
				}
			}
		}
		got <- c
	}()

	var src *net.UDPConn
	if err := inNS(tb.NS(HostA), func() (err error) {
		src, err = net.DialUDP("udp4", nil, laddr)
		return err
	}); err != nil {
		return 0, 0, err
	}
	defer src.Close()
	forceBuffer(src, unix.SO_SNDBUFFORCE, 8<<20)

	// Send in 1 ms rounds of pps/1000 probes (Go timers are ms-grained).
	perTick := max(1, pps/1000)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	pkt := make([]byte, probeSize)
	sent := 0
	for sent < n {
		select {
		case <-ctx.Done():
			sink.Close()
			<-got
			return 0, 0, ctx.Err()
		case <-tick.C:
		}
		for j := 0; j < perTick && sent < n; j++ {
			binary.BigEndian.PutUint32(pkt, uint32(sent))
			if _, err := src.Write(pkt); err != nil {
				if errors.Is(err, syscall.ENOBUFS) {
					break // local queue full, not path loss: resend next tick
				}
				sink.Close()
				<-got
				return 0, 0, fmt.Errorf("probe send: %w", err)
			}
			sent++
		}
	}
	// Late probes: one-way delay plus queueing, with margin.
	sink.SetReadDeadline(time.Now().Add(tb.RTT + 500*time.Millisecond))
	c := <-got
	return float64(n-c.recv) / float64(n) * 100, c.reordered, nil
}

func forceBuffer(c *net.UDPConn, opt, size int) {
	if raw, err := c.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, size) })
	}
}

// resolveTCPTool maps "auto" to the tool LinkRate will use: the built-in
// runner. It clamps the receive window (linkWindow), so its rate settles
// within slow start without a loss episode, and it times the received bytes
// itself from the first read after the warm-up to the end of the stream.
// iperf3 (Debian package iperf3, -tcp iperf3) cannot clamp the window (-w
// sets buffers, which the kernel turns into 0.5–0.9× that as window), so it
// needs a long warm-up, and on this VM its -O accounting once reported
// 100.6 Mbit/s of goodput through a 100 Mbit/s shaper after a 145 ms stall.
// Asked for but not installed, iperf3 falls back to the built-in runner.
func resolveTCPTool(tool string) string {
	if tool == "iperf3" {
		if _, err := exec.LookPath("iperf3"); err == nil {
			return "iperf3"
		}
	}
	if tool == "auto" || tool == "iperf3" {
		return "builtin"
	}
	return tool
}

// LinkRate measures the A→B TCP transfer at the current setting with tool
// (see resolveTCPTool). It returns the result and a description of the tool.
func LinkRate(ctx context.Context, tb *Testbed, tool, cc string, dur, warmup time.Duration) (TCPResult, string, error) {
	switch resolveTCPTool(tool) {
	case "iperf3":
		r, err := RunIperf3(ctx, tb, cc, dur, warmup)
		return r, "iperf3 -C " + cc, err
	case "builtin":
		w := linkWindow(tb.Config)
		r, err := RunTCP(ctx, tb, cc, dur, warmup, w)
		if err == nil && !r.SHA256OK {
			err = fmt.Errorf("built-in TCP runner: SHA-256 mismatch")
		}
		desc := "built-in TCP " + cc
		if w > 0 {
			desc += fmt.Sprintf(", window %d kB", w/1000)
		}
		return r, desc, err
	}
	return TCPResult{}, "", fmt.Errorf("unknown TCP tool %q (want auto, iperf3 or builtin)", tool)
}

// linkWindow is the receive window for measuring the link rate: one
// bandwidth-delay product (plus 1 ms for the hosts) and half the router's
// queue. TCP then keeps the link busy (window ≥ BDP) and never overflows the
// queue (window < BDP + queue), so the rate converges within slow start
// instead of after a loss episode of seconds; the standing half queue (50 ms
// at RTT 100 ms) keeps the link busy while the host deschedules the delay
// line briefly, and leaves room for the burst it releases afterwards. (With
// 80 % of the queue, bursts after long stalls overflowed it.) 0 (no clamp)
// when unshaped.
func linkWindow(c Config) int {
	if c.Rate == 0 {
		return 0
	}
	bdp := float64(c.Rate) / 8 * (c.RTT + time.Millisecond).Seconds()
	return int(bdp + 0.5*float64(c.QueueBytes()))
}

// linkMTU is the MTU of every testbed interface, bytes.
const linkMTU = 1500

// IPRate converts a bulk TCP goodput (bit/s) to the rate of the IP packets
// that carried it: each full-size packet of linkMTU bytes carries MSS bytes
// of payload (MSS = MTU − 40 − TCP options, 1448 with timestamps). This is
// what the shaper limits. With an unknown MSS it assumes 1448.
func (r TCPResult) IPRate() float64 {
	mss := r.MSS
	if mss <= 0 || mss > linkMTU-40 {
		mss = 1448
	}
	return r.Goodput * linkMTU / float64(mss)
}
