package packet

import "encoding/binary"

// MsgDropRequest is a type-7 control packet: the sender asks the receiver to drop a message whose TTL
// expired before retransmission (spec §2.6, §7.2). Its body is 2 words: first and last sequence
// number.
//
// UDT4 quirk (spec §2.6, §9.6 item 3): its sender puts first + message length in Last, one past the
// real last packet. Send the true last number; a receiver should clip Last to what it knows.
//
// Extension: Inclusive is bit 31 of header word 1, which UDT4 leaves 0 and masks off on receipt
// (CPacket::getMsgSeq keeps bits 0–28). Our sender sets it with the true last number, so that
// our receiver can tell that Last from the reference's one-past-the-end value: a receiver that
// took UDT4's Last as inclusive would give up the next message's first packet, and one that
// took ours as one-past-the-end would keep waiting for a packet the sender never sends again.
type MsgDropRequest struct {
	ControlHeader
	// MsgNo is header word 1 bits 0–28, the 29-bit message number, ≤ MaxMsgNo (spec §2.6).
	MsgNo uint32
	// Inclusive is header word 1 bit 31: Last is the message's true last sequence number, not
	// one past it (see above).
	Inclusive bool
	// First and Last are the message's first and last sequence numbers (body words 0 and 1), each
	// ≤ MaxSeqNo, Last not before First in circular order (spec §1.6).
	First, Last uint32
}

// Len returns the encoded size in bytes: HeaderSize + 8 (24).
func (m *MsgDropRequest) Len() int { return HeaderSize + 8 }

// Decode parses the drop request b into m. Errors: ErrTruncated, ErrNotControl, ErrWrongType,
// ErrBodyLength (body not exactly 2 words), ErrFieldRange (word 1 bit 29 or 30 set), ErrBadRange (a
// sequence number above MaxSeqNo or Last before First).
func (m *MsgDropRequest) Decode(b []byte) error {
	var h ControlHeader
	info, body, err := h.decodeHeader(b, TypeMsgDropRequest)
	if err != nil {
		return err
	}
	if len(body) != 8 {
		return ErrBodyLength
	}
	if info&^(MaxMsgNo|inclusiveBit) != 0 {
		return ErrFieldRange
	}
	r := SeqRange{binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:])}
	if !r.valid() {
		return ErrBadRange
	}
	m.ControlHeader, m.MsgNo, m.Inclusive, m.First, m.Last = h, info&MaxMsgNo, info&inclusiveBit != 0, r.First, r.Last
	return nil
}

// inclusiveBit is MsgDropRequest.Inclusive's bit in header word 1.
const inclusiveBit = 1 << 31

// AppendBinary appends the 24-byte drop request to b. Errors: ErrFieldRange (MsgNo above MaxMsgNo),
// ErrBadRange (as for Decode); b is then returned unchanged.
func (m *MsgDropRequest) AppendBinary(b []byte) ([]byte, error) {
	if m.MsgNo > MaxMsgNo {
		return b, ErrFieldRange
	}
	if !(SeqRange{m.First, m.Last}).valid() {
		return b, ErrBadRange
	}
	info := m.MsgNo
	if m.Inclusive {
		info |= inclusiveBit
	}
	b = m.appendHeader(b, TypeMsgDropRequest, info)
	b = binary.BigEndian.AppendUint32(b, m.First)
	return binary.BigEndian.AppendUint32(b, m.Last), nil
}
