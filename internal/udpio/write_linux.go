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
			if n == 0 {
				return false // nothing sent though the call succeeded (never seen): wait
			}
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
	sent := 0
	for sent < len(bufs) {
		if s.gso.Load() {
			if k, seg, total := gsoRun(bufs[sent:]); k >= 2 {
				done, rawErr, errno := w.sendGSO(bufs[sent], seg, total)
				if rawErr != nil {
					return sent, rawErr
				}
				if errno != 0 {
					return sent, s.opError("write", "sendmsg", errno, to)
				}
				if done {
					sent += k
					continue
				}
				// The kernel refused GSO; w.sendGSO turned it off. Send the rest without.
			}
		}
		// The stretch up to the next GSO run (or all of it, without GSO) goes by sendmmsg.
		end := sent + 1
		for end < len(bufs) && end-sent < maxBatch && !(s.gso.Load() && gsoPair(bufs[end:])) {
			end++
		}
		if !s.mmsg {
			n, err := s.writeLoop(bufs[sent:end], to)
			sent += n
			if err != nil {
				return sent, err
			}
			continue
		}
		n, rawErr, errno := w.sendMMsg(bufs[sent:end])
		sent += n
		if rawErr != nil {
			return sent, rawErr
		}
		if errno != 0 {
			return sent, s.opError("write", "sendmmsg", errno, to)
		}
	}
	return sent, nil
}

// sendGSO sends total bytes from first's start as datagrams of seg bytes in one sendmsg. done is
// false if the kernel refused GSO (it is then off for the Conn) or on another failure: the
// RawConn's (closed, deadline) or the system call's errno.
func (w *writer) sendGSO(first []byte, seg, total int) (done bool, rawErr error, errno unix.Errno) {
	h := w.header(0)
	w.iovs[0].Base = unsafe.SliceData(first)
	w.iovs[0].SetLen(total)
	w.putSegment(seg)
	h.Control = &w.oob[0]
	h.SetControllen(gsoOOBSize)
	rawErr, errno = w.run(false, 1)
	w.iovs[0].Base = nil // keep no caller memory alive
	switch {
	case rawErr != nil:
		return false, rawErr, 0
	case errno == 0:
		w.s.gsoSends.Add(1)
		return true, nil, 0
	case errno == unix.EIO || errno == unix.EINVAL:
		// No checksum offload on the device (EIO), or a size the kernel refuses (EINVAL):
		// udp(7). Give up GSO on this Conn.
		w.s.gso.Store(false)
		return false, nil, 0
	}
	return false, nil, errno
}

// sendMMsg sends bufs (at most maxBatch) by sendmmsg; n is how many went.
func (w *writer) sendMMsg(bufs [][]byte) (n int, rawErr error, errno unix.Errno) {
	for i, b := range bufs {
		w.header(i)
		w.iovs[i].Base = unsafe.SliceData(b)
		w.iovs[i].SetLen(len(b))
	}
	rawErr, errno = w.run(true, len(bufs))
	w.s.mmsgCalls.Add(1)
	for i := range bufs {
		w.iovs[i].Base = nil // keep no caller memory alive
	}
	return w.done, rawErr, errno
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

// gsoRun returns how many datagrams from bufs[0] on can go as one GSO send (k ≥ 2 when worth
// it), their segment size and their total length: datagrams of len(bufs[0]) > 0 bytes, the last
// possibly shorter (a shorter one ends the run), each starting where the one before ends, at most
// MaxGSOSegments of them and MaxGSOBytes in all.
func gsoRun(bufs [][]byte) (k, seg, total int) {
	seg = len(bufs[0])
	if seg == 0 || seg > MaxGSOBytes {
		return 1, seg, seg
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(bufs[0])))
	k, total = 1, seg
	for k < len(bufs) && k < MaxGSOSegments {
		b := bufs[k]
		if len(b) == 0 || len(b) > seg || total+len(b) > MaxGSOBytes ||
			uintptr(unsafe.Pointer(unsafe.SliceData(b))) != base+uintptr(k*seg) {
			break
		}
		total += len(b)
		k++
		if len(b) < seg {
			break
		}
	}
	return k, seg, total
}

// gsoPair reports whether a GSO run of at least two datagrams starts at bufs[0].
func gsoPair(bufs [][]byte) bool {
	if len(bufs) < 2 {
		return false
	}
	k, _, _ := gsoRun(bufs[:2])
	return k == 2
}
