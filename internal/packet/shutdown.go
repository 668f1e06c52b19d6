package packet

// Shutdown is a type-5 control packet, sent once on close of a connected socket and never
// retransmitted (spec §2, §3.4). Its body is 4 bytes of padding (spec §1.1).
type Shutdown struct {
	ControlHeader
	// AddInfo is header word 1; 0 from UDT4 (spec §2 table).
	AddInfo uint32
}

// Len returns the encoded size in bytes: HeaderSize + PadSize (20).
func (s *Shutdown) Len() int { return HeaderSize + PadSize }

// Decode parses the shutdown b into s. The body is ignored (any multiple of 4 bytes, including none;
// spec §1.1). Errors: ErrTruncated, ErrNotControl, ErrWrongType, ErrBodyLength.
func (s *Shutdown) Decode(b []byte) error {
	var h ControlHeader
	info, _, err := h.decodeHeader(b, TypeShutdown)
	if err != nil {
		return err
	}
	s.ControlHeader, s.AddInfo = h, info
	return nil
}

// AppendBinary appends the 20-byte shutdown (header + 4 zero bytes, spec §1.1) to b. The error is
// always nil.
func (s *Shutdown) AppendBinary(b []byte) ([]byte, error) {
	return s.appendPadded(b, TypeShutdown, s.AddInfo), nil
}
