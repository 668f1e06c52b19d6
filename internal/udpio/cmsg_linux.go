package udpio

import (
	"encoding/binary"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The control messages are the only wire format udpio writes by hand: the UDP_SEGMENT message of a
// GSO send, and the UDP_GRO and SCM_TIMESTAMPNS messages of a read (udp(7), socket(7), cmsg(3)).

// oobSize is the control-message room per received datagram: a UDP_GRO message needs
// CmsgSpace(4) = 24 bytes and an SCM_TIMESTAMPNS one CmsgSpace(16) = 32 (64-bit); the rest leaves
// space for options a caller may have set.
const oobSize = 64

// gsoOOBSize is the room for one UDP_SEGMENT control message (a uint16 payload).
var gsoOOBSize = unix.CmsgSpace(2)

// sizeofTimespec is the size of struct timespec in an SCM_TIMESTAMPNS message: 16 bytes on 64-bit,
// 8 on 32-bit (the SO_TIMESTAMPNS_OLD layout that unix.SO_TIMESTAMPNS names).
const sizeofTimespec = int(unsafe.Sizeof(unix.Timespec{}))

// putCmsgHeader writes a cmsghdr (cmsg_len as size_t, cmsg_level, cmsg_type as int) for dataLen
// bytes of data at b's start.
func putCmsgHeader(b []byte, level, typ int32, dataLen int) {
	const hl = unix.SizeofCmsghdr
	if hl == 16 {
		binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(dataLen)))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(unix.CmsgLen(dataLen)))
	}
	binary.NativeEndian.PutUint32(b[hl-8:], uint32(level))
	binary.NativeEndian.PutUint32(b[hl-4:], uint32(typ))
}

// putSegment writes a UDP_SEGMENT control message for seg-byte datagrams into b (at least
// gsoOOBSize bytes) and returns it.
func putSegment(b []byte, seg int) []byte {
	putCmsgHeader(b, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 2)
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(seg))
	return b[:gsoOOBSize]
}

// parseCmsgs decodes control messages by hand: unix.ParseOneSocketControlMessage reads a whole
// header out of a buffer shorter than one, and oob need not be aligned. It returns the UDP_GRO
// segment size (0 if none) and the SCM_TIMESTAMPNS stamp in ns since the Unix epoch (ok false if
// none). A malformed message ends the walk; what was found before it is kept.
func parseCmsgs(oob []byte) (seg int, stampNs int64, ok bool) {
	for {
		level, typ, data, rest, more := nextCmsg(oob)
		if !more {
			return seg, stampNs, ok
		}
		oob = rest
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
	}
}

// nextCmsg takes the first control message off oob: its level, type and data, and what follows
// it (empty at the end). more is false when no well-formed header is left (a malformed length
// ends the walk).
func nextCmsg(oob []byte) (level, typ int32, data, rest []byte, more bool) {
	const hl = unix.SizeofCmsghdr
	if len(oob) < hl {
		return 0, 0, nil, nil, false
	}
	var l uint64
	if hl == 16 {
		l = binary.NativeEndian.Uint64(oob)
	} else {
		l = uint64(binary.NativeEndian.Uint32(oob))
	}
	if l < hl || l > uint64(len(oob)) {
		return 0, 0, nil, nil, false
	}
	level = int32(binary.NativeEndian.Uint32(oob[hl-8:]))
	typ = int32(binary.NativeEndian.Uint32(oob[hl-4:]))
	data = oob[unix.CmsgLen(0):l]
	if next := unix.CmsgSpace(int(l) - unix.CmsgLen(0)); next < len(oob) {
		rest = oob[next:]
	}
	return level, typ, data, rest, true
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
