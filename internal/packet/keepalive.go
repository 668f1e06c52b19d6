package packet

// KeepAlive is a type-1 control packet (spec §2.2). UDT4 sends it when its EXP timer expires with
// an empty send buffer (spec §4.5); the receiver does nothing with it beyond resetting its EXP state.
// Its body is 4 bytes of padding (spec §1.1).
type KeepAlive struct {
	ControlHeader
	// AddInfo is header word 1; 0 from UDT4 (spec §2 table).
	AddInfo uint32
}

// Len returns the encoded size in bytes: HeaderSize + PadSize (20).
func (k *KeepAlive) Len() int { return HeaderSize + PadSize }

// Decode parses the keep-alive b into k. The body is ignored: UDT4 sends 4 zero bytes and accepts
// none (spec §1.1); any multiple of 4 bytes is accepted. Errors: ErrTruncated, ErrNotControl,
// ErrWrongType, ErrBodyLength (not a multiple of 4).
func (k *KeepAlive) Decode(b []byte) error {
	var h ControlHeader
	info, _, err := h.decodeHeader(b, TypeKeepAlive)
	if err != nil {
		return err
	}
	k.ControlHeader, k.AddInfo = h, info
	return nil
}

// AppendBinary appends the 20-byte keep-alive (header + 4 zero bytes, spec §1.1) to b. The error is
// always nil.
func (k *KeepAlive) AppendBinary(b []byte) ([]byte, error) {
	return k.appendPadded(b, TypeKeepAlive, k.AddInfo), nil
}
