package udpio

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// gsoOOBSize is the room for one UDP_SEGMENT control message (a uint16 payload).
var gsoOOBSize = unix.CmsgSpace(2)

// writer is the scratch of one WriteBatch call, reused through sysConn.scratch.
type writer struct {
	s    *sysConn
	hdrs [maxBatch]mmsghdr
	iovs [maxBatch]unix.Iovec
	sa   sockaddr
	oob  [32]byte // a UDP_SEGMENT control message

	mmsg       bool // the callback runs sendmmsg (else sendmsg of hdrs[0])
	vlen, done int
	errno      unix.Errno
	fn         func(fd uintptr) bool
}

func newWriter(s *sysConn) any {
	w := &writer{s: s}
	w.fn = w.send
	return w
}

// send is the RawConn.Write callback: false asks the netpoller to wait for writability.
func (w *writer) send(fd uintptr) bool {
	for w.done < w.vlen {
		var n uintptr
		var e unix.Errno
		if w.mmsg {
			n, _, e = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[w.done])),
				uintptr(w.vlen-w.done), 0, 0, 0)
		} else {
			_, _, e = unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[0].Hdr)), 0)
			n = 1
		}
		switch e {
		case 0:
			w.done += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
	}
	return true
}

// run performs the prepared send; it returns the RawConn's error (closed, deadline) or the errno.
func (w *writer) run(mmsg bool, vlen int) (rawErr error, errno unix.Errno) {
	w.mmsg, w.vlen, w.done, w.errno = mmsg, vlen, 0, 0
	if err := w.s.rc.Write(w.fn); err != nil {
		return err, 0
	}
	return nil, w.errno
}

// header points hdrs[i] at the destination and iovs[i].
func (w *writer) header(i int) *unix.Msghdr {
	h := &w.hdrs[i].Hdr
	*h = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&w.sa.raw)), Namelen: w.sa.len, Iov: &w.iovs[i]}
	h.SetIovlen(1)
	return h
}

func (s *sysConn) writeBatch(bufs [][]byte, to netip.AddrPort) (int, error) {
	w := s.scratch.Get().(*writer)
	defer s.scratch.Put(w)
	defer runtime.KeepAlive(bufs) // the kernel reads them through raw pointers
	ok, err := w.sa.set(s.family, to)
	if err != nil {
		return 0, s.opError("write", "sendmsg", unix.EAFNOSUPPORT, to)
	}
	if !ok {
		return s.writeLoop(bufs, to)
	}
	if len(bufs) >= 2 && s.gso.Load() {
		if seg, total, ok := gsoLayout(bufs); ok {
			h := w.header(0)
			w.iovs[0].Base = unsafe.SliceData(bufs[0])
			w.iovs[0].SetLen(total)
			w.putSegment(seg)
			h.Control = &w.oob[0]
			h.SetControllen(gsoOOBSize)
			rawErr, errno := w.run(false, 1)
			w.iovs[0].Base = nil
			switch {
			case rawErr != nil:
				return 0, rawErr
			case errno == 0:
				s.gsoSends.Add(1)
				return len(bufs), nil
			case errno == unix.EIO || errno == unix.EINVAL:
				// No checksum offload on the device (EIO), or a size the kernel refuses (EINVAL):
				// udp(7). Give up GSO on this Conn and send the batch the other way.
				s.gso.Store(false)
			default:
				return 0, s.opError("write", "sendmsg", errno, to)
			}
		}
	}
	if !s.mmsg {
		return s.writeLoop(bufs, to)
	}
	sent := 0
	for sent < len(bufs) {
		chunk := bufs[sent:min(len(bufs), sent+maxBatch)]
		for i, b := range chunk {
			w.header(i)
			w.iovs[i].Base = unsafe.SliceData(b)
			w.iovs[i].SetLen(len(b))
		}
		rawErr, errno := w.run(true, len(chunk))
		s.mmsgCalls.Add(1)
		for i := range chunk {
			w.iovs[i].Base = nil // keep no caller memory alive
		}
		sent += w.done
		if rawErr != nil {
			return sent, rawErr
		}
		if errno != 0 {
			return sent, s.opError("write", "sendmmsg", errno, to)
		}
	}
	return sent, nil
}

// writeLoop sends one datagram per system call through the standard library.
func (s *sysConn) writeLoop(bufs [][]byte, to netip.AddrPort) (int, error) {
	for i, b := range bufs {
		if _, err := s.uc.WriteToUDPAddrPort(b, to); err != nil {
			return i, err
		}
	}
	return len(bufs), nil
}

// putSegment writes a UDP_SEGMENT control message for seg-byte datagrams into w.oob.
func (w *writer) putSegment(seg int) {
	const hl = unix.SizeofCmsghdr // cmsg_len (size_t), cmsg_level (int), cmsg_type (int)
	b := w.oob[:]
	if hl == 16 {
		binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(2)))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(unix.CmsgLen(2)))
	}
	binary.NativeEndian.PutUint32(b[hl-8:], unix.IPPROTO_UDP)
	binary.NativeEndian.PutUint32(b[hl-4:], unix.UDP_SEGMENT)
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(seg))
}

// gsoLayout reports whether bufs can go as one GSO send: at least two datagrams, all of the length
// of bufs[0] > 0 but the last, which is 1..that long, back to back in memory, at most
// MaxGSOSegments and MaxGSOBytes. It returns the segment size and the total length.
func gsoLayout(bufs [][]byte) (seg, total int, ok bool) {
	seg = len(bufs[0])
	n := len(bufs)
	if seg == 0 || n < 2 || n > MaxGSOSegments {
		return 0, 0, false
	}
	last := len(bufs[n-1])
	total = (n-1)*seg + last
	if last == 0 || last > seg || total > MaxGSOBytes {
		return 0, 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(bufs[0])))
	for i := 1; i < n; i++ {
		if i < n-1 && len(bufs[i]) != seg {
			return 0, 0, false
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(bufs[i]))) != base+uintptr(i*seg) {
			return 0, 0, false
		}
	}
	return seg, total, true
}
