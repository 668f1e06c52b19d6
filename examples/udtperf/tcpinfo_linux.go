package main

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpStats reads the kernel's TCP_INFO (tcp(7)): smoothed RTT, segments sent and retransmitted,
// congestion window in segments.
func tcpStats(c *net.TCPConn, sender bool) linkStats {
	s := unknownStats()
	rc, err := c.SyscallConn()
	if err != nil {
		return s
	}
	var info *unix.TCPInfo
	rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if err != nil || info == nil {
		return s
	}
	s.rttMs = float64(info.Rtt) / 1e3
	if sender {
		s.pktSent = float64(info.Segs_out)
		s.pktRetrans = float64(info.Total_retrans)
		s.lost = float64(info.Total_retrans)
		s.cwndPkts = float64(info.Snd_cwnd)
	}
	return s
}
