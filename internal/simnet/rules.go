package simnet

// Packet-type rules for LinkConfig.Drop, decoding only the UDT4 header word 0 (udt4-spec §1.1,
// §1.3): bit 0 is the control flag, bits 1–15 the control type. They never import the codec.

// UDT4 control types (udt4-spec §2).
const (
	UDTHandshake  uint16 = 0
	UDTKeepAlive  uint16 = 1
	UDTACK        uint16 = 2
	UDTNAK        uint16 = 3
	UDTCongestion uint16 = 4
	UDTShutdown   uint16 = 5
	UDTACK2       uint16 = 6
	UDTDropReq    uint16 = 7
	UDTError      uint16 = 8
	UDTUser       uint16 = 0x7FFF
)

// udtHeader is the UDT4 header length in bytes.
const udtHeader = 16

// UDTControlType reports whether b is a UDT4 control packet (at least a 16-byte header with
// the flag bit set) and returns its 15-bit type.
func UDTControlType(b []byte) (typ uint16, ok bool) {
	if len(b) < udtHeader || b[0]&0x80 == 0 {
		return 0, false
	}
	return uint16(b[0]&0x7F)<<8 | uint16(b[1]), true
}

// IsUDTData reports whether b is a UDT4 data packet (a 16-byte header with the flag bit clear).
func IsUDTData(b []byte) bool { return len(b) >= udtHeader && b[0]&0x80 == 0 }

// DropUDTControl returns a rule that drops UDT4 control packets of the given types, e.g.
// DropUDTControl(UDTNAK) drops every NAK.
func DropUDTControl(types ...uint16) func([]byte) bool {
	set := append([]uint16(nil), types...)
	return func(b []byte) bool {
		t, ok := UDTControlType(b)
		if !ok {
			return false
		}
		for _, x := range set {
			if x == t {
				return true
			}
		}
		return false
	}
}

// DropFirst returns a rule that drops the first n packets for which match returns true and
// lets every later one through (for example the first handshake, or the first 3 ACKs).
// The returned rule is stateful; use it on one link.
func DropFirst(n int, match func([]byte) bool) func([]byte) bool {
	return func(b []byte) bool {
		if n > 0 && match(b) {
			n--
			return true
		}
		return false
	}
}
