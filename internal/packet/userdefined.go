package packet

// UserDefined is a type-0x7FFF control packet, sent only by a custom congestion controller
// (sendCustomMsg) and handed to its processCustomMsg (spec §2). ControlHeader.Ext holds the extended
// type (word 0 bits 16–31, spec §1.3).
type UserDefined struct {
	ControlHeader
	// AddInfo is header word 1, user-defined.
	AddInfo uint32
	// Body is the control information, a multiple of 4 bytes (UDT4 byte-swaps it word by word,
	// spec §1.1). Decode sets it to a sub-slice of its input (no copy), including the 4-byte padding
	// of an otherwise empty packet; it is empty only for a 16-byte packet.
	Body []byte
}

// Len returns the encoded size in bytes: 16 + len(Body), or 20 for an empty Body.
func (u *UserDefined) Len() int { return HeaderSize + max(len(u.Body), PadSize) }

// Decode parses the user-defined packet b into u. Errors: ErrTruncated, ErrNotControl, ErrWrongType,
// ErrBodyLength (body not a multiple of 4).
func (u *UserDefined) Decode(b []byte) error {
	var h ControlHeader
	info, body, err := h.decodeHeader(b, TypeUserDefined)
	if err != nil {
		return err
	}
	u.ControlHeader, u.AddInfo, u.Body = h, info, body
	return nil
}

// AppendBinary appends the packet to b; an empty Body is sent as 4 zero bytes (spec §1.1, §2 table).
// Error: ErrBodyLength if len(Body) is not a multiple of 4; b is then returned unchanged.
func (u *UserDefined) AppendBinary(b []byte) ([]byte, error) {
	if len(u.Body)%4 != 0 {
		return b, ErrBodyLength
	}
	if len(u.Body) == 0 {
		return u.appendPadded(b, TypeUserDefined, u.AddInfo), nil
	}
	b = u.appendHeader(b, TypeUserDefined, u.AddInfo)
	return append(b, u.Body...), nil
}
