package packet

// ACK2 is a type-6 control packet, the sender's acknowledgement of a full or medium ACK (spec §2.5).
// The receiver looks AckSeq up in its ACK history for an RTT sample. Its body is 4 bytes of padding
// (spec §1.1).
type ACK2 struct {
	ControlHeader
	// AckSeq is header word 1: the ACK sequence number of the ACK being acknowledged (spec §2.5).
	AckSeq uint32
}

// Len returns the encoded size in bytes: HeaderSize + PadSize (20).
func (a *ACK2) Len() int { return HeaderSize + PadSize }

// Decode parses the ACK2 b into a. The body is ignored (any multiple of 4 bytes, including none;
// spec §1.1). Errors: ErrTruncated, ErrNotControl, ErrWrongType, ErrBodyLength.
func (a *ACK2) Decode(b []byte) error {
	var h ControlHeader
	info, _, err := h.decodeHeader(b, TypeACK2)
	if err != nil {
		return err
	}
	a.ControlHeader, a.AckSeq = h, info
	return nil
}

// AppendBinary appends the 20-byte ACK2 (header + 4 zero bytes, spec §1.1) to b. The error is always
// nil.
func (a *ACK2) AppendBinary(b []byte) ([]byte, error) {
	return a.appendPadded(b, TypeACK2, a.AckSeq), nil
}
