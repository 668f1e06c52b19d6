package packet

import "encoding/binary"

// SeqRange is an inclusive range of 31-bit sequence numbers, First..Last in circular order
// (spec §1.6, §2.4). A single number has First == Last.
type SeqRange struct {
	First, Last uint32
}

// Len returns the number of sequence numbers in r (spec §1.6 len(a,b)), or 0 if r is not a valid
// range (a number above MaxSeqNo or Last before First).
func (r SeqRange) Len() int {
	if !r.valid() {
		return 0
	}
	return int((r.Last-r.First)&seqMask) + 1
}

func (r SeqRange) valid() bool {
	return r.First <= MaxSeqNo && r.Last <= MaxSeqNo && !seqBefore(r.Last, r.First)
}

// NAK is a type-3 control packet, a loss report (spec §2.4). Its body is a compressed loss list of
// big-endian words: a word with bit 31 clear is a single lost number; a word with bit 31 set starts a
// range whose inclusive end is the next word (bit 31 clear). Example (spec §2.4): 0x00000002,
// 0x80000006, 0x0000000B, 0x0000000E means 2, 6–11 and 14.
type NAK struct {
	ControlHeader
	// AddInfo is header word 1; 0 from UDT4 (spec §2 table).
	AddInfo uint32
	// Ranges is the loss list in wire order. Decode appends to Ranges[:0], so a NAK value reused
	// with enough capacity decodes without allocating; a datagram of n bytes holds at most
	// (n−16)/4 ranges, so MaxNAKRanges(mss) capacity always suffices.
	Ranges []SeqRange
}

// MaxNAKRanges returns the most ranges a NAK fitting an MSS of mss bytes can carry: one per body
// word, (mss − 28 − 16)/4 (spec §1.1, §2.4). It returns 0 for an mss below 48.
func MaxNAKRanges(mss int) int { return MaxPayload(mss) / 4 }

// Len returns the encoded size in bytes: 16 + 4 per single number + 8 per longer range.
func (n *NAK) Len() int {
	l := HeaderSize
	for _, r := range n.Ranges {
		l += 4
		if r.First != r.Last {
			l += 4
		}
	}
	return l
}

// Decode parses the NAK b into n, appending its ranges to n.Ranges[:0]. Errors: ErrTruncated,
// ErrNotControl, ErrWrongType, ErrBodyLength (empty body or not a multiple of 4), ErrBadRange (see
// AppendLossList). On error n.Ranges holds the ranges before the bad one.
func (n *NAK) Decode(b []byte) error {
	var h ControlHeader
	info, body, err := h.decodeHeader(b, TypeNAK)
	if err != nil {
		return err
	}
	n.ControlHeader, n.AddInfo = h, info
	n.Ranges, err = AppendLossList(n.Ranges[:0], body)
	return err
}

// AppendLossList decodes the loss-list body of a NAK (spec §2.4) and appends its ranges to dst, at
// most len(body)/4 of them. Errors: ErrBodyLength (empty body or not a multiple of 4), ErrBadRange (a
// range start, bit 31 set, as the last word; a range end with bit 31 set; an end before its start in
// 31-bit circular order, spec §1.6). UDT4 does not bounds-check ranges (spec §2.4, §9.6 item 7); this
// does. On error dst holds the ranges decoded before the bad one.
func AppendLossList(dst []SeqRange, body []byte) ([]SeqRange, error) {
	if len(body) == 0 || len(body)%4 != 0 {
		return dst, ErrBodyLength
	}
	for i := 0; i < len(body); i += 4 {
		w := binary.BigEndian.Uint32(body[i:])
		if w&flagBit == 0 {
			dst = append(dst, SeqRange{w, w})
			continue
		}
		i += 4
		if i >= len(body) {
			return dst, ErrBadRange
		}
		r := SeqRange{w &^ flagBit, binary.BigEndian.Uint32(body[i:])}
		if !r.valid() {
			return dst, ErrBadRange
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// AppendBinary appends the NAK to b. A range with First == Last is sent as one plain word, a longer
// one as First|0x80000000 followed by Last, as UDT4 does (spec §2.4). Errors: ErrBodyLength (no
// ranges), ErrBadRange (a number above MaxSeqNo or Last before First); b is then returned unchanged.
func (n *NAK) AppendBinary(b []byte) ([]byte, error) {
	if len(n.Ranges) == 0 {
		return b, ErrBodyLength
	}
	for _, r := range n.Ranges {
		if !r.valid() {
			return b, ErrBadRange
		}
	}
	b = n.appendHeader(b, TypeNAK, n.AddInfo)
	for _, r := range n.Ranges {
		if r.First == r.Last {
			b = binary.BigEndian.AppendUint32(b, r.First)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, r.First|flagBit)
		b = binary.BigEndian.AppendUint32(b, r.Last)
	}
	return b, nil
}
