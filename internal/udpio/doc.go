// Package udpio is batched UDP I/O for UDT's multiplexer: many datagrams per system call where the
// platform allows, one datagram per call where it does not, behind one small API.
//
// On Linux, for a *net.UDPConn, a Conn uses:
//
//   - UDP generic segmentation offload (GSO, Linux ≥ 4.18, udp(7) UDP_SEGMENT): WriteBatch hands the
//     kernel one sendmsg(2) of up to 64 equal-sized datagrams laid out back to back in memory, with a
//     UDP_SEGMENT control message giving the datagram size; the kernel (or the NIC) cuts it.
//     WriteBatchParts does the same for datagrams given as a header and a body each, wherever they
//     lie, which the kernel gathers (two iovecs per datagram): a sender's payloads need not be
//     copied next to their headers first.
//   - UDP generic receive offload (GRO, Linux ≥ 5.0, udp(7) UDP_GRO): the kernel may hand one read a
//     run of datagrams of one flow glued together (up to 64 KiB) with a UDP_GRO control message giving
//     the segment size; ReadBatch cuts them apart again, handing each datagram out as a slice of its
//     own buffer (Message.Data, valid until the next call), not a copy. On loopback, GSO sends reach
//     a GRO socket still coalesced, so both ends pay one system call per run.
//   - recvmmsg(2) and sendmmsg(2): many datagrams per call, each with its own buffer, through
//     golang.org/x/net/ipv4 and ipv6 ReadBatch/WriteBatch (as wireguard-go's and quic-go's batch
//     I/O use them). The control messages above are the only part written by hand.
//   - Software receive timestamps (socket(7) SO_TIMESTAMPNS): each Message carries the time the
//     kernel received it (Message.Time, on the monotonic clock), so a reader that was descheduled
//     while datagrams queued does not see them as arriving back to back; UDT's arrival-speed and
//     packet-pair estimators (spec §6) depend on that spacing. A GRO run's datagrams share one stamp.
//
// Everywhere else (other systems; any net.PacketConn that is not a *net.UDPConn, such as
// internal/simnet's in-memory Conn) a Conn falls back to one ReadFrom or WriteTo per datagram, using
// the allocation-free ReadFromUDPAddrPort/WriteToUDPAddrPort methods when the PacketConn has them.
//
// For path MTU discovery and ICMP errors a Conn can also set Don't Fragment (EnableDontFragment:
// IP_MTU_DISCOVER / IPV6_MTU_DISCOVER = PMTUDISC_DO), read the kernel's path MTU to a destination
// (MaxDatagram: IP_MTU on a connected probe socket), send one datagram with fragmentation allowed
// (WriteFragmented) and read the socket's error queue (EnableReports, ReadReports: IP_RECVERR /
// IPV6_RECVERR, struct sock_extended_err decoded by hand).
//
// The kernel pitfalls handled (read from udp(7), the kernel sources it cites and quic-go's notes):
// a device without transmit checksum offload makes GSO sends fail with EIO, which turns GSO off
// for the Conn and the batch is sent again without it; EINVAL means either that or, with Don't
// Fragment, a segment above the path MTU, so the datagrams are sent singly first and GSO is
// given up only if they pass (a too-large one then fails with EMSGSIZE); GRO is only turned on
// when setsockopt succeeds, and a GRO socket must never be read except through ReadBatch (a plain
// read would see glued datagrams); dual-stack (AF_INET6) sockets report IPv4 peers as IPv4-mapped
// IPv6 addresses, which ReadBatch unmaps so that they compare equal to the addresses the caller dialed.
package udpio
