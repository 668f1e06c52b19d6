package udpio

import (
	"encoding/binary"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobSize is the control-message room per received datagram: a UDP_GRO message needs
// CmsgSpace(4) = 24 bytes and an SCM_TIMESTAMPNS one CmsgSpace(16) = 32 (64-bit); the rest leaves
// space for options a caller may have set.
const oobSize = 64

// sizeofTimespec is the size of struct timespec in an SCM_TIMESTAMPNS message: 16 bytes on 64-bit,
// 8 on 32-bit (the SO_TIMESTAMPNS_OLD layout that unix.SO_TIMESTAMPNS names).
const sizeofTimespec = int(unsafe.Sizeof(unix.Timespec{}))

// reader is the receive state, used only by the one goroutine calling ReadBatch.
type reader struct {
	s     *sysConn
	hdrs  [maxBatch]mmsghdr
	iovs  [maxBatch]unix.Iovec
	names [maxBatch]sockaddr
	oob   [maxBatch][oobSize]byte

	vlen, n int       // request and result of the last recvmmsg
	calls   int       // recvmmsg calls that returned datagrams, for tests
	errno   error     // its errno, if it failed
	t0      time.Time // the clock read right after the last successful read, for stamps
	fn      func(fd uintptr) bool

	// GRO: datagrams land in gbuf (GROBufferSize per buffer: one on first use, doubled up to
	// groBuffers each time a read fills them all), then runs describe the glued datagrams not yet
	// handed out.
	gbuf  []byte
	runs  [groBuffers]run
	nruns int
	cur   int // first run with datagrams left
}

// run is one GRO read: count datagrams of seg bytes (the last may be shorter) from gbuf[off:end].
type run struct {
	off, end, seg, count int
	addr                 netip.AddrPort
	time                 time.Time // the kernel's receive stamp, shared by the run's datagrams
	truncLast            bool      // the kernel cut the run: its last piece is incomplete
}

func (r *reader) init(s *sysConn) {
	r.s = s
	r.fn = r.recvmmsg
}

// recvmmsg is the RawConn.Read callback: false asks the netpoller to wait for readability.
func (r *reader) recvmmsg(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])),
			uintptr(r.vlen), 0, 0, 0)
		switch e {
		case 0:
			if n == 0 {
				return false // success without a datagram (never seen): wait, never report 0
			}
			r.n, r.errno = int(n), nil
			r.t0 = time.Now()
			r.calls++
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.errno = 0, e
		return true
	}
}

// recv runs one recvmmsg of r.vlen datagrams into r.iovs, with control messages if oob.
func (r *reader) recv(oob bool) error {
	for i := 0; i < r.vlen; i++ {
		h := &r.hdrs[i]
		h.Len = 0
		h.Hdr = unix.Msghdr{
			Name:    (*byte)(unsafe.Pointer(&r.names[i].raw)),
			Namelen: unix.SizeofSockaddrInet6,
			Iov:     &r.iovs[i],
		}
		h.Hdr.SetIovlen(1)
		if oob {
			h.Hdr.Control = &r.oob[i][0]
			h.Hdr.SetControllen(oobSize)
		}
	}
	if err := r.s.rc.Read(r.fn); err != nil {
		return err
	}
	if r.errno != nil {
		return r.s.opError("read", "recvmmsg", r.errno, netip.AddrPort{})
	}
	return nil
}

func setIovec(iov *unix.Iovec, b []byte) {
	iov.Base = unsafe.SliceData(b)
	iov.SetLen(len(b))
}

func (s *sysConn) readBatch(msgs []Message) (int, error) {
	r := &s.r
	if s.gro.Load() {
		if r.cur == r.nruns {
			if err := r.fillGRO(); err != nil {
				return 0, err
			}
		}
		return r.drain(msgs), nil
	}
	if !s.mmsg {
		m := &msgs[0]
		n, oobn, flags, from, err := s.uc.ReadMsgUDPAddrPort(m.Buf, r.oob[0][:])
		if err != nil {
			return 0, err
		}
		r.t0 = time.Now()
		m.N, m.Addr, m.Truncated = n, unmap(from), flags&unix.MSG_TRUNC != 0
		_, m.Time = r.parse(r.oob[0][:oobn])
		return 1, nil
	}
	r.vlen = min(len(msgs), maxBatch)
	for i := 0; i < r.vlen; i++ {
		setIovec(&r.iovs[i], msgs[i].Buf)
	}
	err := r.recv(s.stamps)
	for i := 0; i < r.vlen; i++ {
		r.iovs[i].Base = nil // keep no caller memory alive
	}
	if err != nil {
		return 0, err
	}
	for i := 0; i < r.n; i++ {
		h := &r.hdrs[i]
		m := &msgs[i]
		m.N = int(h.Len)
		m.Addr = r.names[i].addrPort(h.Hdr.Namelen)
		m.Truncated = h.Hdr.Flags&unix.MSG_TRUNC != 0
		m.Time = time.Time{}
		if s.stamps {
			_, m.Time = r.parse(r.oob[i][:min(int(h.Hdr.Controllen), oobSize)])
		}
	}
	if s.lazyGRO && r.n >= lazyGROBatch {
		s.enableGRO()
	}
	return r.n, nil
}

// fillGRO reads into the GRO buffers and records the runs; it blocks until at least one arrives.
func (r *reader) fillGRO() error {
	if r.gbuf == nil {
		r.gbuf = make([]byte, GROBufferSize)
	} else if r.s.mmsg && r.n == len(r.gbuf)/GROBufferSize && r.n < groBuffers {
		// The last read filled every buffer: more were waiting. Its runs are all handed out.
		r.gbuf = make([]byte, 2*len(r.gbuf))
	}
	r.nruns, r.cur = 0, 0
	if !r.s.mmsg {
		b := r.gbuf[:GROBufferSize]
		n, oobn, flags, from, err := r.s.uc.ReadMsgUDPAddrPort(b, r.oob[0][:])
		if err != nil {
			return err
		}
		r.t0 = time.Now()
		r.addRun(0, n, r.oob[0][:oobn], unmap(from), flags&unix.MSG_TRUNC != 0)
		return nil
	}
	r.vlen = len(r.gbuf) / GROBufferSize
	for i := 0; i < r.vlen; i++ {
		setIovec(&r.iovs[i], r.gbuf[i*GROBufferSize:(i+1)*GROBufferSize])
	}
	if err := r.recv(true); err != nil {
		return err
	}
	for i := 0; i < r.n; i++ {
		h := &r.hdrs[i]
		oobn := min(int(h.Hdr.Controllen), oobSize)
		r.addRun(i*GROBufferSize, int(h.Len), r.oob[i][:oobn], r.names[i].addrPort(h.Hdr.Namelen),
			h.Hdr.Flags&unix.MSG_TRUNC != 0)
	}
	return nil
}

// addRun records n bytes read at gbuf[off:] with control messages oob.
func (r *reader) addRun(off, n int, oob []byte, from netip.AddrPort, trunc bool) {
	seg, stamp := r.parse(oob)
	if seg <= 0 || seg >= n {
		seg = max(n, 1) // one datagram (possibly empty)
	} else if trunc && n%seg == 0 {
		trunc = false // the cut fell between datagrams: what we have is whole
	}
	r.runs[r.nruns] = run{off: off, end: off + n, seg: seg, count: max((n+seg-1)/seg, 1),
		addr: from, truncLast: trunc, time: stamp}
	r.nruns++
}

// parse decodes the control messages of one read: the UDP_GRO segment size (0 if none) and the
// SCM_TIMESTAMPNS receive stamp as a monotonic time (zero if none or untrusted, see stampTime).
func (r *reader) parse(oob []byte) (seg int, stamp time.Time) {
	seg, ns, ok := parseCmsgs(oob)
	if ok {
		stamp = stampTime(r.t0, ns)
	}
	return seg, stamp
}

// parseCmsgs decodes control messages by hand: unix.ParseOneSocketControlMessage reads a whole
// header out of a buffer shorter than one, and oob need not be aligned. It returns the UDP_GRO
// segment size (0 if none) and the SCM_TIMESTAMPNS stamp in ns since the Unix epoch (ok false if
// none). A malformed message ends the walk; what was found before it is kept.
func parseCmsgs(oob []byte) (seg int, stampNs int64, ok bool) {
	const hl = unix.SizeofCmsghdr // cmsg_len (size_t), cmsg_level (int), cmsg_type (int)
	for len(oob) >= hl {
		var l uint64
		if hl == 16 {
			l = binary.NativeEndian.Uint64(oob)
		} else {
			l = uint64(binary.NativeEndian.Uint32(oob))
		}
		if l < hl || l > uint64(len(oob)) {
			return seg, stampNs, ok
		}
		level := int32(binary.NativeEndian.Uint32(oob[hl-8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[hl-4:]))
		data := oob[unix.CmsgLen(0):l]
		switch {
		case level == unix.IPPROTO_UDP && typ == unix.UDP_GRO && len(data) >= 4:
			seg = int(int32(binary.NativeEndian.Uint32(data)))
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS && len(data) >= sizeofTimespec:
			// struct timespec: two longs (time_t, long), 8 bytes each on 64-bit, 4 on 32-bit.
			var sec, nsec int64
			if sizeofTimespec == 16 {
				sec = int64(binary.NativeEndian.Uint64(data))
				nsec = int64(binary.NativeEndian.Uint64(data[8:]))
			} else {
				sec = int64(int32(binary.NativeEndian.Uint32(data)))
				nsec = int64(int32(binary.NativeEndian.Uint32(data[4:])))
			}
			// A stamp outside what UnixNano can hold (year 1678–2262) or with a bad nsec is junk.
			if nsec >= 0 && nsec < 1e9 && sec > -9e9 && sec < 9e9 {
				stampNs, ok = sec*1e9+nsec, true
			}
		}
		next := unix.CmsgSpace(int(l) - unix.CmsgLen(0))
		if next >= len(oob) {
			return seg, stampNs, ok
		}
		oob = oob[next:]
	}
	return seg, stampNs, ok
}

// stampTime turns a kernel receive stamp (CLOCK_REALTIME ns since the Unix epoch) into a time
// with t0's monotonic reading: t0 moved back by the stamp's age on the wall clock. A stamp more
// than MaxStampAge old, or ahead of t0 by more than that (a wall-clock step in between), gives the
// zero Time; one slightly ahead (clock granularity) gives t0.
func stampTime(t0 time.Time, stampNs int64) time.Time {
	if t0.IsZero() {
		return time.Time{}
	}
	age := time.Duration(t0.UnixNano() - stampNs)
	if age > MaxStampAge || age < -MaxStampAge {
		return time.Time{}
	}
	return t0.Add(-max(age, 0))
}

// drain hands out datagrams of the pending runs, copying each into the caller's buffer.
func (r *reader) drain(msgs []Message) int {
	out := 0
	for out < len(msgs) && r.cur < r.nruns {
		ru := &r.runs[r.cur]
		l := min(ru.seg, ru.end-ru.off)
		m := &msgs[out]
		k := copy(m.Buf, r.gbuf[ru.off:ru.off+l])
		ru.off += l
		ru.count--
		m.N, m.Addr, m.Time = k, ru.addr, ru.time
		m.Truncated = k < l || (ru.count == 0 && ru.truncLast)
		out++
		if ru.count == 0 {
			r.cur++
		}
	}
	return out
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
