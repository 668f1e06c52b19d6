package packet

import "encoding/binary"

// ACKForm is the form of an ACK, named by its body size in 32-bit words (spec §2.3).
type ACKForm uint8

// ACK forms (spec §2.3 "Three forms").
const (
	// ACKLight (1 word, 20-byte datagram, AckSeq 0): every 64 received packets between timer ACKs.
	ACKLight ACKForm = 1
	// ACKMedium (4 words, 32 bytes): a timer ACK within 10 ms of the last full one.
	ACKMedium ACKForm = 4
	// ACKFull (6 words, 40 bytes): a timer ACK at most every SYN (10 ms).
	ACKFull ACKForm = 6
)

// String returns "light", "medium", "full" or "invalid".
func (f ACKForm) String() string {
	switch f {
	case ACKLight:
		return "light"
	case ACKMedium:
		return "medium"
	case ACKFull:
		return "full"
	}
	return "invalid"
}

// ACK is a type-2 control packet (spec §2.3). Fields beyond Form's word count are zero after Decode
// and not encoded.
type ACK struct {
	ControlHeader
	// AckSeq is header word 1, the ACK sequence number: starts at 1 and rises by 1 per full or medium
	// ACK; 0 in a light ACK (spec §2.3, §1.6: a 31-bit counter; kept as a raw word).
	AckSeq uint32
	// Form is the body size in words: ACKLight, ACKMedium or ACKFull.
	Form ACKForm

	// AckNo is word 0: the first sequence number not yet received, ≤ MaxSeqNo (spec §2.3). All forms.
	AckNo uint32
	// RTT is word 1, the receiver's smoothed RTT in µs. Medium and full.
	RTT uint32
	// RTTVar is word 2, the RTT variance in µs. Medium and full.
	RTTVar uint32
	// AvailBuf is word 3, the available receive buffer in packets (minimum 2), used directly as the
	// sender's flow window. [draft≠code]: the draft says bytes (spec §2.3). Medium and full.
	AvailBuf uint32
	// RecvRate is word 4, the packet receiving rate in packets/s (spec §6.1). Full only.
	RecvRate uint32
	// Capacity is word 5, the estimated link capacity in packets/s (spec §6.2). Full only.
	Capacity uint32
}

// Len returns the encoded size in bytes (20, 32 or 40), or 0 for an invalid Form.
func (a *ACK) Len() int {
	switch a.Form {
	case ACKLight, ACKMedium, ACKFull:
		return HeaderSize + 4*int(a.Form)
	}
	return 0
}

// Decode parses the ACK b into a. The body must be 1, 4 or at least 6 words; words past the sixth
// (SRT's receive rate in bytes/s, spec §2.3) are ignored, as UDT4 ignores them. Errors: ErrTruncated,
// ErrNotControl, ErrWrongType, ErrBodyLength (0, 2, 3 or 5 words, or not a multiple of 4),
// ErrFieldRange (AckNo above MaxSeqNo). It allocates nothing.
func (a *ACK) Decode(b []byte) error {
	var h ControlHeader
	info, body, err := h.decodeHeader(b, TypeACK)
	if err != nil {
		return err
	}
	var f ACKForm
	switch n := len(body) / 4; {
	case n == 1:
		f = ACKLight
	case n == 4:
		f = ACKMedium
	case n >= 6:
		f = ACKFull
	default:
		return ErrBodyLength
	}
	ackNo := binary.BigEndian.Uint32(body)
	if ackNo > MaxSeqNo {
		return ErrFieldRange
	}
	*a = ACK{ControlHeader: h, AckSeq: info, Form: f, AckNo: ackNo}
	if f >= ACKMedium {
		a.RTT = binary.BigEndian.Uint32(body[4:])
		a.RTTVar = binary.BigEndian.Uint32(body[8:])
		a.AvailBuf = binary.BigEndian.Uint32(body[12:])
	}
	if f == ACKFull {
		a.RecvRate = binary.BigEndian.Uint32(body[16:])
		a.Capacity = binary.BigEndian.Uint32(body[20:])
	}
	return nil
}

// AppendBinary appends the ACK in its Form to b (spec §2.3); fields beyond the form are not encoded.
// Error: ErrFieldRange for an invalid Form or AckNo above MaxSeqNo; b is then returned unchanged.
func (a *ACK) AppendBinary(b []byte) ([]byte, error) {
	if a.Len() == 0 || a.AckNo > MaxSeqNo {
		return b, ErrFieldRange
	}
	b = a.appendHeader(b, TypeACK, a.AckSeq)
	b = binary.BigEndian.AppendUint32(b, a.AckNo)
	if a.Form >= ACKMedium {
		b = binary.BigEndian.AppendUint32(b, a.RTT)
		b = binary.BigEndian.AppendUint32(b, a.RTTVar)
		b = binary.BigEndian.AppendUint32(b, a.AvailBuf)
	}
	if a.Form == ACKFull {
		b = binary.BigEndian.AppendUint32(b, a.RecvRate)
		b = binary.BigEndian.AppendUint32(b, a.Capacity)
	}
	return b, nil
}
