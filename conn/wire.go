package conn

import (
	"github.com/udtgo/udt/internal/packet"
)

// isHandshake reports whether b is a handshake control packet (spec §2.1).
func isHandshake(b []byte) bool {
	t, err := packet.Type(b)
	return err == nil && t == packet.TypeHandshake
}

// isShutdown reports whether b is a Shutdown control packet (spec §3.4).
func isShutdown(b []byte) bool {
	t, err := packet.Type(b)
	return err == nil && t == packet.TypeShutdown
}

// encodeShutdown writes a Shutdown for socket dst into b (at least 20 bytes) and returns it.
func encodeShutdown(b []byte, dst uint32) []byte {
	s := packet.Shutdown{ControlHeader: packet.ControlHeader{DstSocketID: dst}}
	out, _ := s.AppendBinary(b[:0])
	return out
}

// encodeHandshake appends h to b[:0]; handshakes always encode.
func encodeHandshake(b []byte, h *packet.Handshake) []byte {
	out, _ := h.AppendBinary(b[:0])
	return out
}
