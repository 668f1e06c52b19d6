package udpio

import (
	"net"
	"net/netip"
	"time"
)

// Limits of one GSO send (udp(7); include/linux/udp.h UDP_MAX_SEGMENTS on older kernels).
const (
	// MaxGSOSegments is the most datagrams WriteBatch glues into one GSO send.
	MaxGSOSegments = 64
	// MaxGSOBytes is the most payload bytes of one GSO send: the largest IPv4 UDP payload,
	// 65535 − 20 (IPv4 header) − 8 (UDP header).
	MaxGSOBytes = 65507
	// GROBufferSize is the size in bytes of each internal buffer a GRO read lands in: the largest
	// run of datagrams the kernel glues together.
	GROBufferSize = 64 << 10
)

// Message is one datagram of a ReadBatch.
type Message struct {
	// Buf is the caller's buffer; ReadBatch reads a datagram into it where the datagram does not
	// already sit in the Conn's own memory, and never replaces, keeps or appends to Buf. Its length
	// is the largest datagram accepted: size it one byte larger than the largest datagram you
	// accept, since the portable path cannot tell a datagram that fills Buf exactly from a longer
	// one, and flags both.
	Buf []byte
	// Data is the datagram, N bytes: Buf[:N], or on a GRO socket a slice of the Conn's own receive
	// buffer, which the datagram was read into with the rest of its run and is not copied out of
	// (the second copy of every byte, 7 % of a bulk receiver's CPU). Either way it is valid until
	// the next ReadBatch call, which may reuse Buf and the Conn's buffer: copy what must outlive it.
	Data []byte
	// N is the number of bytes of the datagram: len(Data), at most len(Buf).
	N int
	// Addr is the sender, IPv4-mapped IPv6 addresses unmapped (netip.Addr.Unmap), so an IPv4 peer
	// of a dual-stack socket compares equal to the IPv4 address that was dialed. An IPv6 scope
	// (link-local zone) is the interface's name where it has one, as the standard library gives it.
	Addr netip.AddrPort
	// Truncated reports a datagram longer than len(Buf) (or, on the portable path, exactly
	// len(Buf) bytes): Data holds only its start, so it should be dropped.
	Truncated bool
	// Time is when the kernel received the datagram (Linux SO_TIMESTAMPNS, socket(7)), not when
	// ReadBatch returned it, so datagrams that waited in the socket buffer while the reader was
	// descheduled keep their true spacing. It carries a monotonic clock reading (the time read
	// right after the system call, moved back by the kernel stamp's age), so Time.Sub against
	// time.Now() is immune to wall-clock steps. The datagrams of one GRO run share one stamp, the
	// kernel's for the whole run. Time is the zero Time when the kernel gave no stamp: on the
	// portable path, on other systems, and for a stamp more than MaxStampAge old or in the
	// future by more than that (a wall-clock step between stamp and read); use time.Now() then.
	Time time.Time
}

// MaxStampAge bounds the age of a kernel receive stamp that ReadBatch trusts: a stamp older than
// this, or ahead of the clock by more, means the wall clock was stepped between the stamp and the
// read, and Message.Time is left zero.
const MaxStampAge = 10 * time.Second

// batcher is one way to move datagrams: the Linux system calls or the portable loop.
type batcher interface {
	readBatch(msgs []Message) (int, error)
	writeBatch(bufs, bodies [][]byte, to netip.AddrPort) (int, error)
	features() (gso, gro, mmsg bool)
	enableReports() bool
	disableReports()
	readReports(rs []Report) int
	enableDontFragment() bool
	maxDatagram(to netip.AddrPort) int
	writeFragmented(b []byte, to netip.AddrPort, mtu int) error
}

// Conn moves batches of UDP datagrams over a net.PacketConn.
//
// One goroutine at a time may call ReadBatch; WriteBatch and Features are safe for concurrent use,
// also with ReadBatch. Closing the underlying PacketConn, or its read or write deadline, ends a
// blocked call with the PacketConn's error (net.ErrClosed, os.ErrDeadlineExceeded inside an
// *net.OpError).
type Conn struct {
	pc net.PacketConn
	b  batcher
}

// options force paths off, for tests and benchmarks.
type options struct {
	noGSO, noGRO bool
	lazyGRO      bool // GRO off until bulk arrives (NewLazyGRO)
	noStamps     bool // leave SO_TIMESTAMPNS off
	portable     bool // use the per-datagram loop even for a *net.UDPConn
}

// New wraps pc. For a *net.UDPConn on Linux it turns on UDP_GRO and SO_TIMESTAMPNS (setsockopt),
// probes UDP_SEGMENT (GSO) support and uses recvmmsg/sendmmsg (golang.org/x/net/ipv4 and ipv6
// ReadBatch/WriteBatch); from then on the socket must be read only through the
// Conn's ReadBatch, since a plain read of a GRO socket returns datagrams glued together. Any other
// PacketConn, and any PacketConn on other systems, gets the portable one-datagram-per-call path,
// which allocates nothing per datagram when pc has the methods ReadFromUDPAddrPort and
// WriteToUDPAddrPort (as *net.UDPConn and internal/simnet's Conn do).
//
// New does not take ownership: closing pc is the caller's job, and ends the Conn.
func New(pc net.PacketConn) *Conn { return newConn(pc, options{}) }

// NewLazyGRO is New with UDP_GRO turned on only once bulk arrives (a recvmmsg finds 16 or more
// datagrams queued); until then reads use recvmmsg. Turning UDP_GRO on makes the kernel enable a
// static key for the socket's lifetime, which costs about 0.7 ms at the setsockopt and again at
// close on this kernel whenever no other GRO socket holds the key: too much for a short-lived
// client socket whose Dial should take a few hundred µs, but worth it (0.25 instead of 0.6 µs of
// CPU per datagram) once the socket receives a bulk transfer.
func NewLazyGRO(pc net.PacketConn) *Conn { return newConn(pc, options{lazyGRO: true}) }

func newConn(pc net.PacketConn, o options) *Conn {
	c := &Conn{pc: pc}
	if uc, ok := pc.(*net.UDPConn); ok && !o.portable {
		if b := newSys(uc, o); b != nil {
			c.b = b
			return c
		}
	}
	c.b = newPortable(pc)
	return c
}

// PacketConn returns the wrapped PacketConn.
func (c *Conn) PacketConn() net.PacketConn { return c.pc }

// Features reports which offloads the Conn uses: GSO sends, GRO receives, and recvmmsg/sendmmsg.
// gso turns false for good after the kernel refused a GSO send.
func (c *Conn) Features() (gso, gro, mmsg bool) { return c.b.features() }

// ReadBatch blocks until at least one datagram is available, then fills msgs[0:n] (Data, N, Addr,
// Truncated, Time) and returns n ≥ 1; msgs[n:] are left alone. How many one call returns:
//
//   - recvmmsg without GRO: what is queued, up to min(len(msgs), 64), read straight into the Bufs;
//   - GRO: the runs one recvmmsg got (one 64 KiB buffer at first, doubled up to 8 while reads fill
//     them all), split into one Message per datagram whose Data points into that buffer (the
//     Bufs are not written; their lengths still cut Data and set Truncated); what does not fit in
//     msgs is kept and returned by the next call without a system call;
//   - the portable path: one.
//
// x/net decodes each sender address into a new *net.UDPAddr: two small allocations per datagram
// read by recvmmsg without GRO, per run of up to 64 KiB with GRO, none on the portable path.
//
// On Linux it also turns on SO_TIMESTAMPNS, so each Message carries the kernel's receive Time.
//
// Pass 64 Messages to let one call drain a GRO run of 44 full-size datagrams or a full recvmmsg.
// Only one goroutine at a time may call ReadBatch. With len(msgs) == 0 it returns 0, nil at once.
// An error means no datagram was read (n == 0): the PacketConn's on Close or at the read deadline
// (net.ErrClosed, os.ErrDeadlineExceeded), or the system call's, in a *net.OpError.
func (c *Conn) ReadBatch(msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	return c.b.readBatch(msgs)
}

// WriteBatch sends bufs, in order, as len(bufs) datagrams to one destination, with as few system
// calls as it can: sendmmsg calls of up to 64 messages each, where a message is
//
//   - a GSO run (when GSO is on): two or more datagrams, all of the length of the first (> 0) but
//     the last, which may be shorter, lying back to back in memory (each starts where the one before
//     ends: carve the buffers from one array at a stride equal to the datagram length; capacity does
//     not matter), at most MaxGSOSegments of them and MaxGSOBytes in all, sent as one buffer with a
//     UDP_SEGMENT control message. A longer batch of such buffers (64 × 1472 bytes, say) is several
//     GSO messages of one call;
//   - any other datagram (or every datagram, without GSO), one message each;
//   - on the portable path: one write per datagram.
//
// A full socket send buffer waits in Go's netpoller (or ends at the write deadline); it never spins.
// A GSO send the kernel refuses with EIO (no transmit checksum offload, udp(7)) turns GSO off for
// this Conn and those datagrams are sent again without it; one refused with EINVAL (the same, or
// a segment above the path MTU with Don't Fragment on) is sent again singly, and GSO is turned
// off only if that passes. It returns how many
// datagrams were sent (the first n of bufs) and, if not all, the error that stopped it: the
// PacketConn's (net.ErrClosed, os.ErrDeadlineExceeded) or the system call's, in a *net.OpError.
// Safe for concurrent use; allocates nothing in steady state.
func (c *Conn) WriteBatch(bufs [][]byte, to netip.AddrPort) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	return c.b.writeBatch(bufs, nil, to)
}

// WriteBatchParts is WriteBatch for datagrams in two parts: datagram i is hdrs[i] followed by
// bodies[i] (len(bodies) ≥ len(hdrs); either part may be empty), which the kernel gathers (two
// iovecs per datagram), so that neither part has to be copied next to the other first: a
// protocol header built per packet in front of a payload that stays in the sender's buffer. GSO
// runs are as in WriteBatch, but the datagrams need not lie back to back: a run is two or more
// datagrams of the total length of the first but the last, which may be shorter, sent as one
// message of 2·k buffers. On the portable path each datagram is gathered into a pooled buffer and
// written on its own. Returns and errors as WriteBatch's; safe for concurrent use.
func (c *Conn) WriteBatchParts(hdrs, bodies [][]byte, to netip.AddrPort) (int, error) {
	if len(hdrs) == 0 {
		return 0, nil
	}
	return c.b.writeBatch(hdrs, bodies[:len(hdrs)], to)
}
