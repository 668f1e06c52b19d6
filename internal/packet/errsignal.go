package packet

// ErrorSignal is a type-8 control packet, "error signal from the peer side" (spec §2; the draft omits
// it, [draft≠code]). UDT4 sends it only when recvfile() hits a file write error, with Code 4000
// (ErrorCodeFile); the peer's blocked send then fails with error 7000. Its body is 4 bytes of padding
// (spec §1.1).
type ErrorSignal struct {
	ControlHeader
	// Code is header word 1, the UDT error code (major × 1000 + minor, spec §7.5).
	Code uint32
}

// Len returns the encoded size in bytes: HeaderSize + PadSize (20).
func (e *ErrorSignal) Len() int { return HeaderSize + PadSize }

// Decode parses the error signal b into e. The body is ignored (any multiple of 4 bytes, including
// none; spec §1.1). Errors: ErrTruncated, ErrNotControl, ErrWrongType, ErrBodyLength.
func (e *ErrorSignal) Decode(b []byte) error {
	var h ControlHeader
	info, _, err := h.decodeHeader(b, TypeErrorSignal)
	if err != nil {
		return err
	}
	e.ControlHeader, e.Code = h, info
	return nil
}

// AppendBinary appends the 20-byte error signal (header + 4 zero bytes, spec §1.1) to b. The error
// is always nil.
func (e *ErrorSignal) AppendBinary(b []byte) ([]byte, error) {
	return e.appendPadded(b, TypeErrorSignal, e.Code), nil
}
