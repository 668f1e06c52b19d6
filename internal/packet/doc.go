// Package packet encodes and decodes every UDT4 packet exactly as the UDT 4.11 reference puts it on
// the wire (docs/udt4-spec.md in the repository, §1–2, "the spec" below).
//
// Every packet is one UDP datagram: a 16-byte header of four big-endian 32-bit words, then a body
// (spec §1.1). Data packets carry the payload untouched; control packets carry an array of big-endian
// 32-bit words (spec §1.1, §1.3).
//
// Hot-path design: encoders append to a caller-provided buffer (AppendBinary, the
// encoding.BinaryAppender shape), decoders fill caller-owned values and keep sub-slices of the input
// (a Data payload is never copied). Neither allocates when the caller reuses its buffers and values.
// Classification without a full decode: IsControl, Type and DestSocketID.
//
// Decoders treat every input as hostile: they never panic and return one of the sentinel errors below
// (compare with errors.Is or ==; they are never wrapped, so rejecting a packet allocates nothing).
// Encoders refuse values that cannot be represented (a 32-bit sequence number, an empty NAK, …) with
// the same sentinels, so that for every value v that encodes, decode(encode(v)) == v, up to what the
// wire cannot carry: ACK fields beyond the ACK's form, and an empty user-defined or generic control
// body, which goes out as the 4-byte padding and comes back as it. For every input b that decodes,
// encode(decode(b)) == b whenever b is in canonical form (what UDT4 sends): 4-byte padding on empty
// bodies, an ACK of exactly 1, 4 or 6 words, no one-number NAK range written as a pair.
//
// The package checks wire form only. Semantic bounds (MSS in [MinMSS, local MSS], flow window caps,
// ACK numbers not beyond what was sent, …) belong to the connection.
//
// Types and their decoders/encoders (one file each):
//
//	Data               data packet, payload aliased                    spec §1.2
//	Handshake          type 0, 48-byte body, peer-IP quirk             spec §2.1, §3.2
//	KeepAlive          type 1, padding                                 spec §2.2
//	ACK                type 2, light/medium/full (1/4/6 words)         spec §2.3
//	NAK                type 3, loss list with bit-31 ranges            spec §2.4
//	CongestionWarning  type 4, padding                                 spec §2, §5.6
//	Shutdown           type 5, padding                                 spec §2, §3.4
//	ACK2               type 6, padding                                 spec §2.5
//	MsgDropRequest     type 7, first/last sequence numbers             spec §2.6
//	ErrorSignal        type 8, padding, error code in word 1           spec §2
//	UserDefined        type 0x7FFF, extended type in word 0            spec §2
//	Control            any control packet, body undecoded              spec §1.3
//
// A receive loop classifies with IsControl and Type, routes with DestSocketID, then decodes into
// values it reuses; a send path appends into a reused buffer (see the package example).
package packet
