package packet

import (
	"encoding/binary"
	"net/netip"
)

// SocketType is handshake body word 1 (spec §2.1). [draft≠code]: the draft says 0/1; UDT4 puts
// 1 = STREAM and 2 = DGRAM on the wire.
type SocketType uint32

// Socket types (spec §2.1, enum UDTSockType).
const (
	SocketStream SocketType = 1
	SocketDgram  SocketType = 2
)

// ReqType is handshake body word 5, the request / connection type, a signed 32-bit value
// (spec §2.1, §3.2, §3.3).
type ReqType int32

// Request types (spec §2.1 word 5).
const (
	// ReqConnect (1): a client's first request, and the listener's stateless cookie reply (spec §3.2).
	ReqConnect ReqType = 1
	// ReqRendezvous (0): a rendezvous request (spec §3.3).
	ReqRendezvous ReqType = 0
	// ReqResponse (−1): the client's second request carrying the cookie, the listener's final
	// response, and a rendezvous peer's answer (spec §3.2, §3.3).
	ReqResponse ReqType = -1
	// ReqRendezvousResponse (−2): an already-connected rendezvous peer's answer; never answered
	// (spec §3.3).
	ReqRendezvousResponse ReqType = -2
	// ReqRejected (1002, UDT error ECONNREJ): the listener refuses the connection (spec §3.2).
	ReqRejected ReqType = 1002
)

// Handshake is a type-0 control packet with its 48-byte body of 12 big-endian words (spec §2.1).
// All body fields are kept as received; bounds (version, socket type, MSS, flow window, ISN ≤
// MaxSeqNo) are the connection's to check (spec §3.2). Note that a connected UDT4 socket answering a
// repeated or rendezvous handshake fills in only ISN, MSS, FlowWindow, ReqType and SocketID and sends
// Version and SocketType as 0 (spec §3.2).
type Handshake struct {
	ControlHeader
	// AddInfo is header word 1; 0 from UDT4 (spec §2 table).
	AddInfo uint32

	// Version is word 0: Version (4) (spec §2.1).
	Version uint32
	// SocketType is word 1: SocketStream or SocketDgram (spec §2.1).
	SocketType SocketType
	// ISN is word 2, the initial sequence number; the listener echoes the client's (spec §2.1, §3.2).
	ISN uint32
	// MSS is word 3 in bytes, IP and UDP headers included (spec §2.1).
	MSS uint32
	// FlowWindow is word 4, the maximum flow window ("flight flag size") in packets (spec §2.1).
	FlowWindow uint32
	// ReqType is word 5 (spec §2.1).
	ReqType ReqType
	// SocketID is word 6, the sender's socket ID (spec §2.1).
	SocketID uint32
	// Cookie is word 7, the SYN cookie; 0 in a first request (spec §2.1, §8.1).
	Cookie uint32
	// PeerIP is words 8–11 as big-endian word values: the receiver's address as the sender sees it,
	// each 4-byte group of the address byte-reversed (UDT4's host-order quirk, spec §2.1): 127.0.0.1
	// is {0x0100007f, 0, 0, 0}. Use SetPeerAddr and PeerAddr to convert.
	PeerIP [4]uint32
}

// Len returns the encoded size in bytes: HandshakeSize (64).
func (h *Handshake) Len() int { return HandshakeSize }

// SetPeerAddr stores a in PeerIP the way UDT4 does on a little-endian host (spec §2.1 "Peer-IP
// quirk"): each 4-byte group of the address is written in little-endian order, so 127.0.0.1 goes on
// the wire as bytes 01 00 00 7f followed by 12 zero bytes. An IPv4 or IPv4-mapped address fills word
// 8 only; an IPv6 address fills words 8–11. The zone is ignored; an invalid a stores zeros.
func (h *Handshake) SetPeerAddr(a netip.Addr) {
	h.PeerIP = [4]uint32{}
	a = a.Unmap()
	switch {
	case a.Is4():
		v := a.As4()
		h.PeerIP[0] = binary.LittleEndian.Uint32(v[:])
	case a.Is6():
		v := a.As16()
		for i := range h.PeerIP {
			h.PeerIP[i] = binary.LittleEndian.Uint32(v[4*i:])
		}
	}
}

// PeerAddr decodes PeerIP as SetPeerAddr encodes it. The wire does not say the address family
// (UDT4 uses its own socket's, spec §2.1), so the caller passes is6: false reads word 8 as an IPv4
// address, true reads words 8–11 as an IPv6 address. UDT4 never checks this field; treat it as a hint.
func (h *Handshake) PeerAddr(is6 bool) netip.Addr {
	if !is6 {
		var v [4]byte
		binary.LittleEndian.PutUint32(v[:], h.PeerIP[0])
		return netip.AddrFrom4(v)
	}
	var v [16]byte
	for i, w := range h.PeerIP {
		binary.LittleEndian.PutUint32(v[4*i:], w)
	}
	return netip.AddrFrom16(v)
}

// Decode parses the handshake packet b into h. Errors: ErrTruncated, ErrNotControl, ErrWrongType,
// ErrBodyLength (body not exactly HandshakeBodySize bytes; spec §3.2 step 1). It allocates nothing.
func (h *Handshake) Decode(b []byte) error {
	var ch ControlHeader
	info, body, err := ch.decodeHeader(b, TypeHandshake)
	if err != nil {
		return err
	}
	if len(body) != HandshakeBodySize {
		return ErrBodyLength
	}
	h.ControlHeader = ch
	h.AddInfo = info
	h.Version = binary.BigEndian.Uint32(body)
	h.SocketType = SocketType(binary.BigEndian.Uint32(body[4:]))
	h.ISN = binary.BigEndian.Uint32(body[8:])
	h.MSS = binary.BigEndian.Uint32(body[12:])
	h.FlowWindow = binary.BigEndian.Uint32(body[16:])
	h.ReqType = ReqType(binary.BigEndian.Uint32(body[20:]))
	h.SocketID = binary.BigEndian.Uint32(body[24:])
	h.Cookie = binary.BigEndian.Uint32(body[28:])
	for i := range h.PeerIP {
		h.PeerIP[i] = binary.BigEndian.Uint32(body[32+4*i:])
	}
	return nil
}

// AppendBinary appends the 64-byte handshake to b (encoding.BinaryAppender). Every field is a full
// 32-bit word, so it never fails; the error is always nil.
func (h *Handshake) AppendBinary(b []byte) ([]byte, error) {
	b = h.appendHeader(b, TypeHandshake, h.AddInfo)
	for _, w := range [...]uint32{h.Version, uint32(h.SocketType), h.ISN, h.MSS, h.FlowWindow,
		uint32(h.ReqType), h.SocketID, h.Cookie, h.PeerIP[0], h.PeerIP[1], h.PeerIP[2], h.PeerIP[3]} {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b, nil
}
