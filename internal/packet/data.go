package packet

import "encoding/binary"

// Position is the 2-bit FF field of a data packet: where the packet sits in its message (spec §1.2).
type Position uint8

// Message positions (spec §1.2: 10 first, 01 last, 11 solo, 00 middle).
const (
	PosMiddle Position = 0b00
	PosLast   Position = 0b01
	PosFirst  Position = 0b10
	PosSolo   Position = 0b11
)

// String returns the FF bits as two binary digits, as in the test vectors' `ff=` label.
func (p Position) String() string {
	switch p {
	case PosMiddle:
		return "00"
	case PosLast:
		return "01"
	case PosFirst:
		return "10"
	case PosSolo:
		return "11"
	}
	return "??"
}

// Data is a data packet (spec §1.2):
//
//	word 0: 0 | sequence number (31 bits)
//	word 1: FF (2 bits) | O (1 bit) | message number (29 bits)
//	word 2: timestamp (µs)
//	word 3: destination socket ID
//	payload (≤ MSS − 44 bytes), never byte-swapped
type Data struct {
	// Seq is the 31-bit packet sequence number, ≤ MaxSeqNo (spec §1.2).
	Seq uint32
	// Position is the FF field (spec §1.2).
	Position Position
	// InOrder is the O bit: the message must be delivered in order. Stream send() sets false,
	// sendfile() true (spec §1.2).
	InOrder bool
	// MsgNo is the 29-bit message number, ≤ MaxMsgNo; UDT4 starts at 1 and wraps to 1 (spec §1.2).
	MsgNo uint32
	// Timestamp is µs since the sending socket was opened, wrapping at 2^32 (spec §1.2).
	Timestamp uint32
	// DstSocketID is the peer's socket ID (spec §1.2, §3.1).
	DstSocketID uint32
	// Payload is the packet body. Decode sets it to a sub-slice of its input (no copy; capacity
	// limited to its length, so appending to it never overwrites the input).
	Payload []byte
}

// Len returns the encoded size in bytes: HeaderSize + len(Payload).
func (d *Data) Len() int { return HeaderSize + len(d.Payload) }

// Decode parses the data packet b into d. Payload aliases b[HeaderSize:]. A packet cut after its
// header (e.g. a captured prefix) decodes with the payload it has. Errors: ErrTruncated (len(b) < 16),
// ErrNotData (flag bit set). Decode allocates nothing.
func (d *Data) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return ErrTruncated
	}
	w0 := binary.BigEndian.Uint32(b)
	if w0&flagBit != 0 {
		return ErrNotData
	}
	w1 := binary.BigEndian.Uint32(b[4:])
	d.Seq = w0
	d.Position = Position(w1 >> 30)
	d.InOrder = w1>>29&1 != 0
	d.MsgNo = w1 & MaxMsgNo
	d.Timestamp = binary.BigEndian.Uint32(b[8:])
	d.DstSocketID = binary.BigEndian.Uint32(b[12:])
	d.Payload = b[HeaderSize:len(b):len(b)]
	return nil
}

// header checks the field widths and returns words 0 and 1.
func (d *Data) header() (w0, w1 uint32, err error) {
	if d.Seq > MaxSeqNo || d.MsgNo > MaxMsgNo || d.Position > PosSolo {
		return 0, 0, ErrFieldRange
	}
	w1 = uint32(d.Position)<<30 | d.MsgNo
	if d.InOrder {
		w1 |= 1 << 29
	}
	return d.Seq, w1, nil
}

// PutHeader writes d's 16-byte header into b[:HeaderSize], for a payload already in place at
// b[HeaderSize:]; d.Payload is ignored. Errors: ErrTruncated if len(b) < HeaderSize, ErrFieldRange if
// Seq > MaxSeqNo, MsgNo > MaxMsgNo or Position > 3.
func (d *Data) PutHeader(b []byte) error {
	if len(b) < HeaderSize {
		return ErrTruncated
	}
	w0, w1, err := d.header()
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, w0)
	binary.BigEndian.PutUint32(b[4:], w1)
	binary.BigEndian.PutUint32(b[8:], d.Timestamp)
	binary.BigEndian.PutUint32(b[12:], d.DstSocketID)
	return nil
}

// AppendBinary appends the encoded packet (header, then Payload) to b and returns the extended
// buffer (encoding.BinaryAppender). It allocates only if b lacks capacity. Error: ErrFieldRange as
// for PutHeader; b is then returned unchanged.
func (d *Data) AppendBinary(b []byte) ([]byte, error) {
	w0, w1, err := d.header()
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, w0)
	b = binary.BigEndian.AppendUint32(b, w1)
	b = binary.BigEndian.AppendUint32(b, d.Timestamp)
	b = binary.BigEndian.AppendUint32(b, d.DstSocketID)
	return append(b, d.Payload...), nil
}
