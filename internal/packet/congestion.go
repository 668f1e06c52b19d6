package packet

// CongestionWarning is a type-4 control packet ("congestion/delay warning"). UDT4 never sends it (the
// code is commented out); on receipt a UDT4 sender multiplies its packet period by 1.125 (spec §2,
// §5.6). [draft≠code]: the draft lists type 4 as unused. Its body is 4 bytes of padding (spec §1.1).
type CongestionWarning struct {
	ControlHeader
	// AddInfo is header word 1; 0 in UDT4's code (spec §2 table).
	AddInfo uint32
}

// Len returns the encoded size in bytes: HeaderSize + PadSize (20).
func (c *CongestionWarning) Len() int { return HeaderSize + PadSize }

// Decode parses the congestion warning b into c. The body is ignored (any multiple of 4 bytes,
// including none; spec §1.1). Errors: ErrTruncated, ErrNotControl, ErrWrongType, ErrBodyLength.
func (c *CongestionWarning) Decode(b []byte) error {
	var h ControlHeader
	info, _, err := h.decodeHeader(b, TypeCongestionWarning)
	if err != nil {
		return err
	}
	c.ControlHeader, c.AddInfo = h, info
	return nil
}

// AppendBinary appends the 20-byte congestion warning (header + 4 zero bytes, spec §1.1) to b. The
// error is always nil.
func (c *CongestionWarning) AppendBinary(b []byte) ([]byte, error) {
	return c.appendPadded(b, TypeCongestionWarning, c.AddInfo), nil
}
