package udpio

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobSize is the control-message room per received datagram: a UDP_GRO message needs
// CmsgSpace(4) = 24 bytes; the rest leaves space for options a caller may have set.
const oobSize = 64

// reader is the receive state, used only by the one goroutine calling ReadBatch.
type reader struct {
	s     *sysConn
	hdrs  [maxBatch]mmsghdr
	iovs  [maxBatch]unix.Iovec
	names [maxBatch]sockaddr
	oob   [maxBatch][oobSize]byte

	vlen, n int   // request and result of the last recvmmsg
	calls   int   // recvmmsg calls that returned datagrams, for tests
	errno   error // its errno, if it failed
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
	truncLast            bool // the kernel cut the run: its last piece is incomplete
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
	if s.gro {
		if r.cur == r.nruns {
			if err := r.fillGRO(); err != nil {
				return 0, err
			}
		}
		return r.drain(msgs), nil
	}
	if !s.mmsg {
		m := &msgs[0]
		n, _, flags, from, err := s.uc.ReadMsgUDPAddrPort(m.Buf, nil)
		if err != nil {
			return 0, err
		}
		m.N, m.Addr, m.Truncated = n, unmap(from), flags&unix.MSG_TRUNC != 0
		return 1, nil
	}
	r.vlen = min(len(msgs), maxBatch)
	for i := 0; i < r.vlen; i++ {
		setIovec(&r.iovs[i], msgs[i].Buf)
	}
	err := r.recv(false)
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
	seg := groSegment(oob)
	if seg <= 0 || seg >= n {
		seg = max(n, 1) // one datagram (possibly empty)
	} else if trunc && n%seg == 0 {
		trunc = false // the cut fell between datagrams: what we have is whole
	}
	r.runs[r.nruns] = run{off: off, end: off + n, seg: seg, count: max((n+seg-1)/seg, 1),
		addr: from, truncLast: trunc}
	r.nruns++
}

// groSegment returns the UDP_GRO segment size in oob, or 0 if there is none. It decodes the
// control messages by hand: unix.ParseOneSocketControlMessage reads a whole header out of a buffer
// shorter than one, and oob need not be aligned.
func groSegment(oob []byte) int {
	const hl = unix.SizeofCmsghdr // cmsg_len (size_t), cmsg_level (int), cmsg_type (int)
	for len(oob) >= hl {
		var l uint64
		if hl == 16 {
			l = binary.NativeEndian.Uint64(oob)
		} else {
			l = uint64(binary.NativeEndian.Uint32(oob))
		}
		if l < hl || l > uint64(len(oob)) {
			return 0
		}
		level := int32(binary.NativeEndian.Uint32(oob[hl-8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[hl-4:]))
		data := oob[unix.CmsgLen(0):l]
		if level == unix.IPPROTO_UDP && typ == unix.UDP_GRO && len(data) >= 4 {
			return int(int32(binary.NativeEndian.Uint32(data)))
		}
		next := unix.CmsgSpace(int(l) - unix.CmsgLen(0))
		if next >= len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
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
		m.N, m.Addr = k, ru.addr
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
