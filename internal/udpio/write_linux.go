package udpio

import (
	"errors"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// writer is the scratch of one WriteBatch call, reused through sysConn.scratch.
type writer struct {
	ms    [maxBatch]ipv4.Message
	bufs  [maxBatch][1][]byte
	parts [][]byte           // the gathered messages' buffers (WriteBatchParts): header, body, header, …
	oob   [maxBatch][32]byte // UDP_SEGMENT control messages
	count [maxBatch]int      // datagrams in each message
	gso   [maxBatch]bool     // the message is a GSO send
	to    net.UDPAddr        // the destination, reused: x/net takes a net.Addr
	ip    [16]byte
}

// setTo points w.to at ap without allocating.
func (w *writer) setTo(ap netip.AddrPort) {
	a := ap.Addr()
	if a.Is4() {
		*(*[4]byte)(w.ip[:4]) = a.As4()
		w.to.IP = w.ip[:4]
	} else {
		w.ip = a.As16()
		w.to.IP = w.ip[:]
	}
	w.to.Port, w.to.Zone = int(ap.Port()), a.Zone()
}

// pack lays the datagrams out as at most maxBatch messages: each GSO run (when gso) as one
// message with a UDP_SEGMENT control message, every other datagram as a message of its own.
// Datagram i is bufs[i], or with bodies bufs[i] followed by bodies[i], gathered from both (two
// iovecs per datagram). It returns the number of messages.
func (w *writer) pack(bufs, bodies [][]byte, gso bool) int {
	if bodies != nil && cap(w.parts) < 2*len(bufs) {
		w.parts = make([][]byte, 0, 2*min(len(bufs), maxBatch*MaxGSOSegments))
	}
	w.parts = w.parts[:0]
	k := 0
	for i := 0; i < len(bufs) && k < maxBatch; k++ {
		m := &w.ms[k]
		m.Addr, m.OOB = &w.to, nil
		w.count[k], w.gso[k] = 1, false
		n, seg, total := 1, 0, 0
		if gso && bodies == nil {
			n, seg, total = gsoRun(bufs[i:])
		} else if gso {
			n, seg = gsoRunParts(bufs[i:], bodies[i:])
		}
		if n >= 2 {
			m.OOB = putSegment(w.oob[k][:], seg)
			w.count[k], w.gso[k] = n, true
		}
		switch {
		case bodies != nil:
			start := len(w.parts)
			for j := i; j < i+w.count[k]; j++ {
				w.parts = append(w.parts, bufs[j], bodies[j])
			}
			m.Buffers = w.parts[start:len(w.parts):len(w.parts)]
		case n >= 2:
			w.bufs[k][0] = unsafe.Slice(unsafe.SliceData(bufs[i]), total)
			m.Buffers = w.bufs[k][:]
		default:
			w.bufs[k][0] = bufs[i]
			m.Buffers = w.bufs[k][:]
		}
		i += w.count[k]
	}
	return k
}

// clear drops the references to the caller's buffers.
func (w *writer) clear(k int) {
	for i := range k {
		w.bufs[i][0], w.ms[i].Buffers, w.ms[i].Addr = nil, nil, nil
	}
	clear(w.parts)
	w.parts = w.parts[:0]
}

func (s *sysConn) writeBatch(bufs, bodies [][]byte, to netip.AddrPort) (int, error) {
	w := s.scratch.Get().(*writer)
	defer s.scratch.Put(w)
	w.setTo(to)
	sent := 0
	gso := s.gso.Load()
	// singles: the last GSO message was refused with EINVAL, which means either a device that
	// cannot segment or, with Don't Fragment on, a segment larger than the path MTU (the kernel
	// says EINVAL for a GSO size it cannot send, EMSGSIZE for a single datagram): sending the
	// same datagrams singly tells which.
	singles := false
	for sent < len(bufs) {
		var rest [][]byte
		if bodies != nil {
			rest = bodies[sent:]
		}
		k := w.pack(bufs[sent:], rest, gso && !singles)
		n, err := s.x.WriteBatch(w.ms[:k], 0)
		s.sendCalls.Add(1)
		if err != nil {
			n = 0 // the first message failed; none of this call's went
		}
		for i := range n {
			sent += w.count[i]
			if w.gso[i] {
				s.gsoSends.Add(1)
			}
		}
		gsoFailed := err != nil && w.gso[0]
		w.clear(k)
		switch {
		case err == nil, errors.Is(err, unix.EINTR):
			if singles && n > 0 {
				// Single datagrams go where the GSO send did not: the device refuses GSO (udp(7)).
				s.gso.Store(false)
				gso = false
			}
			singles = false
		case gsoFailed && errors.Is(err, unix.EIO):
			// No checksum offload on the device: udp(7). Give up GSO on this Conn and send
			// these datagrams again without it.
			s.gso.Store(false)
			gso = false
		case gsoFailed && errors.Is(err, unix.EINVAL):
			singles = true
		default:
			return sent, err
		}
	}
	return sent, nil
}

// gsoRunParts is gsoRun for datagrams of two parts (WriteBatchParts), which need not lie back to
// back: datagram j is hdrs[j] then bodies[j], and only their lengths matter.
func gsoRunParts(hdrs, bodies [][]byte) (k, seg int) {
	seg = len(hdrs[0]) + len(bodies[0])
	if seg == 0 || seg > MaxGSOBytes {
		return 1, seg
	}
	k, total := 1, seg
	for k < len(hdrs) && k < MaxGSOSegments {
		l := len(hdrs[k]) + len(bodies[k])
		if l == 0 || l > seg || total+l > MaxGSOBytes {
			break
		}
		total += l
		k++
		if l < seg {
			break
		}
	}
	return k, seg
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
