package packet

import "encoding/binary"

// Control is any control packet, undecoded past its header (spec §1.3): for logging, for types this
// package does not know (9–0x7FFE), and for forwarding. Use the typed decoders for known types.
type Control struct {
	ControlHeader
	// Type is the 15-bit control type (spec §1.3).
	Type ControlType
	// AddInfo is header word 1 (spec §1.3).
	AddInfo uint32
	// Body is the control information, a multiple of 4 bytes (spec §1.1); Decode sets it to a
	// sub-slice of its input.
	Body []byte
}

// Len returns the encoded size in bytes: 16 + len(Body), or 20 for an empty Body.
func (c *Control) Len() int { return HeaderSize + max(len(c.Body), PadSize) }

// Decode parses any control packet b into c. Errors: ErrTruncated, ErrNotControl, ErrBodyLength
// (body not a multiple of 4).
func (c *Control) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return ErrTruncated
	}
	t := ControlType(binary.BigEndian.Uint32(b) >> 16 & 0x7FFF)
	var h ControlHeader
	info, body, err := h.decodeHeader(b, t)
	if err != nil {
		return err
	}
	c.ControlHeader, c.Type, c.AddInfo, c.Body = h, t, info, body
	return nil
}

// AppendBinary appends the packet to b; an empty Body is sent as 4 zero bytes (spec §1.1). Errors:
// ErrFieldRange if Type is above 0x7FFF, ErrBodyLength if len(Body) is not a multiple of 4; b is then
// returned unchanged.
func (c *Control) AppendBinary(b []byte) ([]byte, error) {
	if c.Type > TypeUserDefined {
		return b, ErrFieldRange
	}
	if len(c.Body)%4 != 0 {
		return b, ErrBodyLength
	}
	if len(c.Body) == 0 {
		return c.appendPadded(b, c.Type, c.AddInfo), nil
	}
	b = c.appendHeader(b, c.Type, c.AddInfo)
	return append(b, c.Body...), nil
}
