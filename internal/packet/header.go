package packet

import (
	"encoding"
	"encoding/binary"
	"errors"
)

// Sizes and limits (spec §1.1, §1.2, §1.6, §2.1).
const (
	// HeaderSize is the size of every UDT packet header in bytes: four 32-bit words (spec §1.1).
	HeaderSize = 16
	// HandshakeBodySize is the exact size of a handshake's control information in bytes: 12 words
	// (spec §2.1). The listener ignores any other size (spec §3.2 step 1).
	HandshakeBodySize = 48
	// HandshakeSize is a whole handshake datagram in bytes (spec §1.4).
	HandshakeSize = HeaderSize + HandshakeBodySize
	// UDPIPOverhead is what UDT4 subtracts from the MSS for the IP and UDP headers, in bytes, for IPv4
	// and (a UDT4 quirk) IPv6 alike (spec §1.1, §9.6 item 6).
	UDPIPOverhead = 28
	// MinMSS is the smallest MSS in bytes UDT4 accepts: UDPIPOverhead + HandshakeBodySize (spec §1.1).
	MinMSS = UDPIPOverhead + HandshakeBodySize
	// DefaultMSS is UDT4's default MSS in bytes, IP and UDP headers included (spec §1.1).
	DefaultMSS = 1500
	// PadSize is the 4 zero bytes UDT4 puts in every otherwise empty control body (spec §1.1).
	PadSize = 4
	// MaxSeqNo is the largest 31-bit packet sequence number; it wraps to 0 (spec §1.2, §1.6).
	MaxSeqNo = 0x7FFFFFFF
	// MaxMsgNo is the largest 29-bit message number; UDT4 wraps it to 1, never 0 (spec §1.2).
	MaxMsgNo = 0x1FFFFFFF
	// Version is the only UDT version a UDT4 listener accepts in a handshake (spec §2.1 word 0).
	Version = 4
	// ErrorCodeFile is the only error code UDT4 sends in an error signal (4000, EFILE; spec §2 table).
	ErrorCodeFile = 4000

	flagBit  = 0x80000000 // bit 0 of word 0: 1 = control (spec §1.1)
	seqMask  = 0x7FFFFFFF // spec §1.5
	seqThres = 0x3FFFFFFF // circular-compare threshold (spec §1.6)
)

// MaxPayload returns the data payload size in bytes for an MSS in bytes: mss − 28 − 16, 1456 for the
// default 1500 (spec §1.1, §3.2 "payload = MSS − 44"). It returns 0 for an mss below 44.
func MaxPayload(mss int) int {
	if mss < UDPIPOverhead+HeaderSize {
		return 0
	}
	return mss - UDPIPOverhead - HeaderSize
}

// ControlType is the 15-bit control packet type, bits 1–15 of header word 0 (spec §1.3, §2).
type ControlType uint16

// Control packet types (spec §2 table; 4 and 8 as named by the code, [draft≠code]).
const (
	TypeHandshake         ControlType = 0      // spec §2.1
	TypeKeepAlive         ControlType = 1      // spec §2.2
	TypeACK               ControlType = 2      // spec §2.3
	TypeNAK               ControlType = 3      // spec §2.4
	TypeCongestionWarning ControlType = 4      // spec §2, §5.6
	TypeShutdown          ControlType = 5      // spec §2, §3.4
	TypeACK2              ControlType = 6      // spec §2.5
	TypeMsgDropRequest    ControlType = 7      // spec §2.6
	TypeErrorSignal       ControlType = 8      // spec §2
	TypeUserDefined       ControlType = 0x7FFF // spec §2; the extended type is in word 0 bits 16–31
)

var typeNames = [...]string{"handshake", "keepalive", "ack", "nak", "congestion-warning", "shutdown",
	"ack2", "msg-drop-request", "error-signal"}

// String returns the type's name, "user-defined" for 0x7FFF and "unknown" otherwise.
func (t ControlType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	if t == TypeUserDefined {
		return "user-defined"
	}
	return "unknown"
}

// Sentinel errors. Decoders and encoders return them unwrapped.
var (
	// ErrTruncated: the datagram is shorter than the 16-byte header (spec §1.1).
	ErrTruncated = errors.New("udt packet: shorter than the 16-byte header")
	// ErrNotData: a data decoder got a control packet (flag bit set, spec §1.1).
	ErrNotData = errors.New("udt packet: not a data packet")
	// ErrNotControl: a control decoder or Type got a data packet (flag bit clear, spec §1.1).
	ErrNotControl = errors.New("udt packet: not a control packet")
	// ErrWrongType: a control decoder got a control packet of another type (spec §1.3).
	ErrWrongType = errors.New("udt packet: wrong control type")
	// ErrBodyLength: the control body's length is not valid for its type: not a multiple of 4
	// (spec §1.1), a handshake body other than 48 bytes (spec §2.1), an ACK body other than 1, 4 or
	// ≥ 6 words (spec §2.3), an empty NAK (spec §2.4), a drop request other than 2 words (spec §2.6).
	ErrBodyLength = errors.New("udt packet: invalid control body length")
	// ErrBadRange: a malformed loss list or drop request: a range start (bit 31 set) not followed by an
	// end, bit 31 set on an end, or an end before its start in 31-bit circular order (spec §1.6,
	// §2.4, §2.6).
	ErrBadRange = errors.New("udt packet: malformed sequence range")
	// ErrFieldRange: a field does not fit its wire width, e.g. a sequence number above MaxSeqNo, a
	// message number above MaxMsgNo, a position above 3, an ACK form other than 1, 4 or 6 words.
	ErrFieldRange = errors.New("udt packet: field value out of range")
)

// IsControl reports whether b is a control packet: bit 0 of the first byte set (spec §1.1). It is
// false for an empty b. It does not check the length; the decoders do.
func IsControl(b []byte) bool {
	return len(b) > 0 && b[0]&0x80 != 0
}

// Type returns the control type of the control packet b (spec §1.5: (w0>>16) & 0x7FFF). It returns
// ErrTruncated if b is shorter than HeaderSize and ErrNotControl for a data packet.
func Type(b []byte) (ControlType, error) {
	if len(b) < HeaderSize {
		return 0, ErrTruncated
	}
	w0 := binary.BigEndian.Uint32(b)
	if w0&flagBit == 0 {
		return 0, ErrNotControl
	}
	return ControlType(w0 >> 16 & 0x7FFF), nil
}

// DestSocketID returns header word 3 of any packet, the destination socket ID; 0 addresses the
// listener or rendezvous socket on the port (spec §1.2, §1.3, §3.1). It returns ErrTruncated if b is
// shorter than HeaderSize.
func DestSocketID(b []byte) (uint32, error) {
	if len(b) < HeaderSize {
		return 0, ErrTruncated
	}
	return binary.BigEndian.Uint32(b[12:]), nil
}

// ControlHeader holds the control-header fields every control type shares (spec §1.3). Word 1,
// "additional info", is a named field of each type because its meaning differs per type (spec §2).
type ControlHeader struct {
	// Ext is bits 16–31 of word 0: the extended type for TypeUserDefined, reserved (0 from UDT4)
	// otherwise. It is preserved as received (spec §1.3).
	Ext uint16
	// Timestamp is header word 2 in µs. UDT4 leaves it 0 in control packets and ignores it
	// (spec §1.3, [draft≠code]).
	Timestamp uint32
	// DstSocketID is header word 3, the receiver's socket ID (spec §1.3, §3.1).
	DstSocketID uint32
}

// appendHeader appends a control header of type t with additional info info.
func (h *ControlHeader) appendHeader(b []byte, t ControlType, info uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, flagBit|uint32(t)<<16|uint32(h.Ext))
	b = binary.BigEndian.AppendUint32(b, info)
	b = binary.BigEndian.AppendUint32(b, h.Timestamp)
	return binary.BigEndian.AppendUint32(b, h.DstSocketID)
}

// decodeHeader checks that b is a control packet of type t whose body is a multiple of 4 bytes
// (spec §1.1) and fills h. It returns word 1 and the body (a sub-slice of b).
func (h *ControlHeader) decodeHeader(b []byte, t ControlType) (info uint32, body []byte, err error) {
	if len(b) < HeaderSize {
		return 0, nil, ErrTruncated
	}
	w0 := binary.BigEndian.Uint32(b)
	if w0&flagBit == 0 {
		return 0, nil, ErrNotControl
	}
	if ControlType(w0>>16&0x7FFF) != t {
		return 0, nil, ErrWrongType
	}
	body = b[HeaderSize:len(b):len(b)]
	if len(body)%4 != 0 {
		return 0, nil, ErrBodyLength
	}
	h.Ext = uint16(w0)
	h.Timestamp = binary.BigEndian.Uint32(b[8:])
	h.DstSocketID = binary.BigEndian.Uint32(b[12:])
	return binary.BigEndian.Uint32(b[4:]), body, nil
}

// appendPadded appends a control packet whose body is only padding: 4 zero bytes (spec §1.1).
func (h *ControlHeader) appendPadded(b []byte, t ControlType, info uint32) []byte {
	b = h.appendHeader(b, t, info)
	return append(b, 0, 0, 0, 0)
}

// seqBefore reports whether a comes before b in 31-bit circular order (spec §1.6 and UDT4's seqcmp:
// cmp(a,b) < 0, where cmp is a−b if |a−b| < 0x3FFFFFFF, else b−a). Both must be ≤ MaxSeqNo.
func seqBefore(a, b uint32) bool {
	d := int64(a) - int64(b)
	if d <= -seqThres || d >= seqThres {
		return d > 0
	}
	return d < 0
}

// Every packet type encodes as an encoding.BinaryAppender.
var (
	_ encoding.BinaryAppender = (*Data)(nil)
	_ encoding.BinaryAppender = (*Handshake)(nil)
	_ encoding.BinaryAppender = (*KeepAlive)(nil)
	_ encoding.BinaryAppender = (*ACK)(nil)
	_ encoding.BinaryAppender = (*NAK)(nil)
	_ encoding.BinaryAppender = (*CongestionWarning)(nil)
	_ encoding.BinaryAppender = (*Shutdown)(nil)
	_ encoding.BinaryAppender = (*ACK2)(nil)
	_ encoding.BinaryAppender = (*MsgDropRequest)(nil)
	_ encoding.BinaryAppender = (*ErrorSignal)(nil)
	_ encoding.BinaryAppender = (*UserDefined)(nil)
	_ encoding.BinaryAppender = (*Control)(nil)
)
