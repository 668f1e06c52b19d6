package packet

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"slices"
	"testing"
)

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

// ctrlPkt builds a control packet of type t with additional info, dst and body words.
func ctrlPkt(t ControlType, info, dst uint32, body ...uint32) []byte {
	return append(words(0x80000000|uint32(t)<<16, info, 0, dst), words(body...)...)
}

func TestConstants(t *testing.T) {
	if HeaderSize != 16 || HandshakeBodySize != 48 || HandshakeSize != 64 || UDPIPOverhead != 28 ||
		MinMSS != 76 || PadSize != 4 {
		t.Fatal("size constants differ from spec §1.1")
	}
	if MaxPayload(DefaultMSS) != 1456 || MaxPayload(43) != 0 || MaxPayload(44) != 0 {
		t.Errorf("MaxPayload: %d %d", MaxPayload(1500), MaxPayload(43))
	}
	if ReqRejected != 1002 || ReqResponse != -1 || ReqRendezvousResponse != -2 || SocketDgram != 2 {
		t.Error("handshake constants differ from spec §2.1")
	}
	if TypeErrorSignal.String() != "error-signal" || TypeUserDefined.String() != "user-defined" ||
		ControlType(9).String() != "unknown" {
		t.Error("ControlType.String")
	}
}

func TestClassifierShort(t *testing.T) {
	for n := range HeaderSize {
		b := make([]byte, n)
		if n > 0 {
			b[0] = 0x80
		}
		if _, err := Type(b); err != ErrTruncated {
			t.Errorf("Type(%d bytes) = %v", n, err)
		}
		if _, err := DestSocketID(b); err != ErrTruncated {
			t.Errorf("DestSocketID(%d bytes) = %v", n, err)
		}
		var d Data
		if err := d.Decode(b); err != ErrTruncated {
			t.Errorf("Data.Decode(%d bytes) = %v", n, err)
		}
		var c Control
		if err := c.Decode(b); err != ErrTruncated {
			t.Errorf("Control.Decode(%d bytes) = %v", n, err)
		}
	}
	if IsControl(nil) || IsControl([]byte{0x7f}) || !IsControl([]byte{0x80}) {
		t.Error("IsControl")
	}
}

func TestDataLayout(t *testing.T) {
	// Spec §1.2 captured example: 2a4df00f 80000001 00000f69 10029d60.
	raw, _ := hex.DecodeString("2a4df00f80000001" + "00000f6910029d60" + "abcd")
	var d Data
	if err := d.Decode(raw); err != nil {
		t.Fatal(err)
	}
	want := Data{Seq: 0x2a4df00f, Position: PosFirst, MsgNo: 1, Timestamp: 3945, DstSocketID: 0x10029d60}
	if d.Seq != want.Seq || d.Position != want.Position || d.InOrder || d.MsgNo != 1 ||
		d.Timestamp != 3945 || d.DstSocketID != want.DstSocketID || !bytes.Equal(d.Payload, []byte{0xab, 0xcd}) {
		t.Fatalf("decoded %+v", d)
	}
	if &d.Payload[0] != &raw[16] || cap(d.Payload) != 2 {
		t.Error("payload is not a capacity-limited sub-slice of the input")
	}
	// All field extremes: seq 2^31−1, solo, O=1, msg 2^29−1.
	d = Data{Seq: MaxSeqNo, Position: PosSolo, InOrder: true, MsgNo: MaxMsgNo, Timestamp: 0xffffffff, DstSocketID: 7}
	b, err := d.AppendBinary(nil)
	if err != nil || !bytes.Equal(b, words(0x7fffffff, 0xffffffff, 0xffffffff, 7)) {
		t.Fatalf("extremes: %x %v", b, err)
	}
	buf := make([]byte, 20)
	if err := d.PutHeader(buf); err != nil || !bytes.Equal(buf[:16], b) {
		t.Fatalf("PutHeader: %x %v", buf, err)
	}
	if err := d.PutHeader(buf[:15]); err != ErrTruncated {
		t.Errorf("PutHeader short: %v", err)
	}
	for _, bad := range []Data{{Seq: MaxSeqNo + 1}, {MsgNo: MaxMsgNo + 1}, {Position: 4}} {
		if b, err := bad.AppendBinary([]byte{1}); err != ErrFieldRange || len(b) != 1 {
			t.Errorf("%+v: %v, %x", bad, err, b)
		}
		if err := bad.PutHeader(buf); err != ErrFieldRange {
			t.Errorf("%+v PutHeader: %v", bad, err)
		}
	}
	if err := d.Decode(ctrlPkt(TypeKeepAlive, 0, 1, 0)); err != ErrNotData {
		t.Errorf("data decoder on control: %v", err)
	}
}

func TestHandshakePeerAddr(t *testing.T) {
	var h Handshake
	h.SetPeerAddr(netip.MustParseAddr("127.0.0.1"))
	if h.PeerIP != [4]uint32{0x0100007f, 0, 0, 0} { // spec §2.1 [verified]: bytes 01 00 00 7f
		t.Fatalf("127.0.0.1 → %08x", h.PeerIP)
	}
	h.SetPeerAddr(netip.MustParseAddr("::ffff:10.1.2.3"))
	if h.PeerIP != [4]uint32{0x0302010a, 0, 0, 0} || h.PeerAddr(false) != netip.MustParseAddr("10.1.2.3") {
		t.Fatalf("v4-mapped → %08x", h.PeerIP)
	}
	a6 := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	h.SetPeerAddr(a6)
	if h.PeerIP != [4]uint32{0xb80d0120, 0x02000100, 0x04000300, 0x06000500} {
		t.Fatalf("v6 → %08x", h.PeerIP)
	}
	if h.PeerAddr(true) != a6 {
		t.Fatalf("v6 round trip: %v", h.PeerAddr(true))
	}
	b, _ := h.AppendBinary(nil)
	if want, _ := hex.DecodeString("b80d0120020001000400030006000500"); !bytes.Equal(b[HeaderSize+32:], want) {
		t.Fatalf("wire bytes %x", b[HeaderSize+32:])
	}
	h.SetPeerAddr(netip.Addr{})
	if h.PeerIP != [4]uint32{} {
		t.Error("invalid address not zeroed")
	}
}

func TestHandshakeBodyLength(t *testing.T) {
	var h Handshake
	h.ReqType, h.Version, h.SocketType = ReqRejected, Version, SocketDgram
	b, _ := h.AppendBinary(nil)
	if len(b) != HandshakeSize || h.Len() != HandshakeSize {
		t.Fatalf("len %d", len(b))
	}
	if binary.BigEndian.Uint32(b[HeaderSize+20:]) != 1002 {
		t.Fatal("req type word")
	}
	for _, n := range []int{HeaderSize, HeaderSize + 4, HandshakeSize - 4, HandshakeSize + 4} {
		bb := append(slices.Clone(b), make([]byte, 8)...)[:n]
		if err := h.Decode(bb); err != ErrBodyLength {
			t.Errorf("%d-byte handshake: %v", n, err)
		}
	}
	var h2 Handshake
	h.ReqType = ReqResponse
	b, _ = h.AppendBinary(b[:0])
	if err := h2.Decode(b); err != nil || h2 != h {
		t.Errorf("round trip %+v %v", h2, err)
	}
	if err := h2.Decode(ctrlPkt(TypeKeepAlive, 0, 0, make([]uint32, 12)...)); err != ErrWrongType {
		t.Errorf("keep-alive as handshake: %v", err)
	}
	if err := h2.Decode(append(words(1, 2, 3, 4), make([]byte, 48)...)); err != ErrNotControl {
		t.Errorf("data as handshake: %v", err)
	}
}

// TestPaddedTypes checks the 4-byte padding on encode and that 16-byte bodiless packets, 4-byte
// padding and longer word-multiple bodies are accepted, odd lengths rejected (spec §1.1).
func TestPaddedTypes(t *testing.T) {
	type codec interface {
		Decode([]byte) error
		AppendBinary([]byte) ([]byte, error)
		Len() int
	}
	type paddedCase struct {
		typ  ControlType
		c    codec
		info func() uint32
	}
	ka, sd, cw, a2, es := &KeepAlive{}, &Shutdown{}, &CongestionWarning{}, &ACK2{}, &ErrorSignal{}
	cases := []paddedCase{
		{TypeKeepAlive, ka, func() uint32 { return ka.AddInfo }},
		{TypeShutdown, sd, func() uint32 { return sd.AddInfo }},
		{TypeCongestionWarning, cw, func() uint32 { return cw.AddInfo }},
		{TypeACK2, a2, func() uint32 { return a2.AckSeq }},
		{TypeErrorSignal, es, func() uint32 { return es.Code }},
	}
	for _, tc := range cases {
		canon := ctrlPkt(tc.typ, 4000, 0x1234, 0)
		for _, in := range [][]byte{canon[:16], canon, ctrlPkt(tc.typ, 4000, 0x1234, 1, 2)} {
			if err := tc.c.Decode(in); err != nil {
				t.Errorf("%v %d bytes: %v", tc.typ, len(in), err)
				continue
			}
			if tc.info() != 4000 {
				t.Errorf("%v: word 1 = %d", tc.typ, tc.info())
			}
			out, err := tc.c.AppendBinary(nil)
			if err != nil || !bytes.Equal(out, canon) || tc.c.Len() != 20 {
				t.Errorf("%v: re-encoded %x, want %x (%v)", tc.typ, out, canon, err)
			}
		}
		if err := tc.c.Decode(append(canon, 0)); err != ErrBodyLength {
			t.Errorf("%v 21 bytes: %v", tc.typ, err)
		}
		if err := tc.c.Decode(ctrlPkt(tc.typ+1, 0, 0, 0)); err != ErrWrongType {
			t.Errorf("%v: wrong type: %v", tc.typ, err)
		}
	}
}

func TestACKForms(t *testing.T) {
	full := ACK{ControlHeader: ControlHeader{DstSocketID: 9}, AckSeq: 3, Form: ACKFull, AckNo: MaxSeqNo,
		RTT: 1, RTTVar: 2, AvailBuf: 3, RecvRate: 4, Capacity: 5}
	for _, f := range []ACKForm{ACKLight, ACKMedium, ACKFull} {
		a := full
		a.Form = f
		b, err := a.AppendBinary(nil)
		if err != nil || len(b) != HeaderSize+4*int(f) || a.Len() != len(b) {
			t.Fatalf("%v: %d bytes, %v", f, len(b), err)
		}
		var d ACK
		if err := d.Decode(b); err != nil {
			t.Fatal(err)
		}
		want := normalizeACK(a)
		if d != want {
			t.Errorf("%v: %+v, want %+v", f, d, want)
		}
	}
	// SRT's 7-word ACK decodes as full (spec §2.3).
	var d ACK
	if err := d.Decode(ctrlPkt(TypeACK, 1, 0, 10, 1, 2, 3, 4, 5, 99)); err != nil || d.Form != ACKFull || d.Capacity != 5 {
		t.Errorf("7-word ACK: %+v %v", d, err)
	}
	for _, n := range []int{0, 2, 3, 5} {
		if err := d.Decode(ctrlPkt(TypeACK, 1, 0, make([]uint32, n)...)); err != ErrBodyLength {
			t.Errorf("%d-word ACK: %v", n, err)
		}
	}
	if err := d.Decode(ctrlPkt(TypeACK, 0, 0, 0x80000000)); err != ErrFieldRange {
		t.Errorf("ACK number with bit 31: %v", err)
	}
	for _, bad := range []ACK{{Form: 0}, {Form: 2}, {Form: ACKLight, AckNo: MaxSeqNo + 1}} {
		if b, err := bad.AppendBinary(nil); err != ErrFieldRange || b != nil {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestNAKDecode(t *testing.T) {
	var n NAK
	// The draft's example (spec §2.4): 2, 6–11, 14.
	if err := n.Decode(ctrlPkt(TypeNAK, 0, 5, 2, 0x80000006, 0xb, 0xe)); err != nil {
		t.Fatal(err)
	}
	if want := []SeqRange{{2, 2}, {6, 11}, {14, 14}}; !slices.Equal(n.Ranges, want) {
		t.Fatalf("%v", n.Ranges)
	}
	if n.Ranges[1].Len() != 6 || (SeqRange{5, 4}).Len() != 0 {
		t.Error("SeqRange.Len")
	}
	// A range across the wrap: 2^31−2 .. 1 is 4 numbers (spec §1.6).
	if err := n.Decode(ctrlPkt(TypeNAK, 0, 5, 0xfffffffe, 1)); err != nil || n.Ranges[0] != (SeqRange{MaxSeqNo - 1, 1}) ||
		n.Ranges[0].Len() != 4 {
		t.Fatalf("wrap range: %v %v", n.Ranges, err)
	}
	// A non-canonical range x..x is accepted.
	if err := n.Decode(ctrlPkt(TypeNAK, 0, 5, 0x80000007, 7)); err != nil || n.Ranges[0] != (SeqRange{7, 7}) {
		t.Fatalf("x..x: %v %v", n.Ranges, err)
	}
	bad := map[string][]uint32{
		"start as last word":         {1, 0x80000005},
		"start followed by start":    {0x80000005, 0x80000007, 9},
		"end before start":           {0x80000009, 5},
		"end 2^30 after start":       {0x80000000, 0x3fffffff},
		"start alone":                {0x80000001},
		"end before start at wrap":   {0x80000001, 0x7fffffff},
		"good then end before start": {3, 0x80000010, 0xf},
	}
	for name, body := range bad {
		if err := n.Decode(ctrlPkt(TypeNAK, 0, 5, body...)); err != ErrBadRange {
			t.Errorf("%s: %v (%v)", name, err, n.Ranges)
		}
	}
	if err := n.Decode(ctrlPkt(TypeNAK, 0, 5)); err != ErrBodyLength {
		t.Errorf("empty NAK: %v", err)
	}
	if err := n.Decode(append(ctrlPkt(TypeNAK, 0, 5, 1), 0)); err != ErrBodyLength {
		t.Errorf("odd NAK: %v", err)
	}
	if MaxNAKRanges(1500) != 364 {
		t.Errorf("MaxNAKRanges(1500) = %d", MaxNAKRanges(1500))
	}
}

func TestNAKEncode(t *testing.T) {
	n := NAK{ControlHeader: ControlHeader{DstSocketID: 5}, Ranges: []SeqRange{{2, 2}, {6, 11}, {14, 14}}}
	b, err := n.AppendBinary(nil)
	if err != nil || !bytes.Equal(b, ctrlPkt(TypeNAK, 0, 5, 2, 0x80000006, 0xb, 0xe)) || n.Len() != len(b) {
		t.Fatalf("%x %v", b, err)
	}
	for _, r := range [][]SeqRange{nil, {{MaxSeqNo + 1, MaxSeqNo + 1}}, {{1, 1}, {9, 3}}, {{0, 1 << 30}}} {
		n.Ranges = r
		want := ErrBadRange
		if len(r) == 0 {
			want = ErrBodyLength
		}
		if b, err := n.AppendBinary(nil); err != want || b != nil {
			t.Errorf("%v: %v", r, err)
		}
	}
}

func TestMsgDropRequest(t *testing.T) {
	m := MsgDropRequest{ControlHeader: ControlHeader{DstSocketID: 1}, MsgNo: MaxMsgNo, First: MaxSeqNo, Last: 3}
	b, err := m.AppendBinary(nil)
	if err != nil || !bytes.Equal(b, ctrlPkt(TypeMsgDropRequest, MaxMsgNo, 1, MaxSeqNo, 3)) || len(b) != m.Len() {
		t.Fatalf("%x %v", b, err)
	}
	var d MsgDropRequest
	if err := d.Decode(b); err != nil || d != m {
		t.Fatalf("%+v %v", d, err)
	}
	for body, want := range map[[3]uint32]error{
		{MaxMsgNo + 1, 1, 2}: ErrFieldRange, {1, 5, 4}: ErrBadRange, {1, 0x80000000, 0x80000001}: ErrBadRange,
	} {
		if err := d.Decode(ctrlPkt(TypeMsgDropRequest, body[0], 1, body[1], body[2])); err != want {
			t.Errorf("%v: %v", body, err)
		}
	}
	if err := d.Decode(ctrlPkt(TypeMsgDropRequest, 1, 1, 1)); err != ErrBodyLength {
		t.Errorf("1-word body: %v", err)
	}
	// The Inclusive extension is bit 31 of word 1; bits 29 and 30 stay invalid.
	m.Inclusive = true
	if b, _ = m.AppendBinary(nil); !bytes.Equal(b, ctrlPkt(TypeMsgDropRequest, 1<<31|MaxMsgNo, 1, MaxSeqNo, 3)) {
		t.Fatalf("inclusive: %x", b)
	}
	if err := d.Decode(b); err != nil || d != m {
		t.Fatalf("inclusive decode: %+v %v", d, err)
	}
	if err := d.Decode(ctrlPkt(TypeMsgDropRequest, 1<<30|5, 1, 1, 2)); err != ErrFieldRange {
		t.Errorf("bit 30: %v", err)
	}
}

func TestUserDefinedAndControl(t *testing.T) {
	u := UserDefined{ControlHeader: ControlHeader{Ext: 0xbeef, Timestamp: 3}, AddInfo: 7}
	b, err := u.AppendBinary(nil)
	if err != nil || !bytes.Equal(b, words(0xffffbeef, 7, 3, 0, 0)) || u.Len() != 20 {
		t.Fatalf("%x %v", b, err)
	}
	var d UserDefined
	if err := d.Decode(b); err != nil || d.Ext != 0xbeef || !bytes.Equal(d.Body, []byte{0, 0, 0, 0}) {
		t.Fatalf("%+v %v", d, err)
	}
	u.Body = []byte{1, 2, 3}
	if _, err := u.AppendBinary(nil); err != ErrBodyLength {
		t.Errorf("3-byte body: %v", err)
	}
	// The generic decoder handles unknown types and preserves reserved bits.
	raw := ctrlPkt(9, 1, 2, 3, 4)
	raw[3] = 0x55
	var c Control
	if err := c.Decode(raw); err != nil || c.Type != 9 || c.Ext != 0x55 || len(c.Body) != 8 {
		t.Fatalf("%+v %v", c, err)
	}
	if out, err := c.AppendBinary(nil); err != nil || !bytes.Equal(out, raw) {
		t.Errorf("%x %v", out, err)
	}
	c.Type = 0x8000
	if _, err := c.AppendBinary(nil); err != ErrFieldRange {
		t.Errorf("type 0x8000: %v", err)
	}
	// Reserved bits survive every typed decoder too.
	raw = ctrlPkt(TypeKeepAlive, 0, 0, 0)
	raw[2], raw[3] = 0x12, 0x34
	var k KeepAlive
	if err := k.Decode(raw); err != nil || k.Ext != 0x1234 {
		t.Fatal(err)
	}
	if out, _ := k.AppendBinary(nil); !bytes.Equal(out, raw) {
		t.Errorf("reserved bits lost: %x", out)
	}
}

// refSeqCmp is UDT4's seqcmp (spec §1.6), on int32 like the reference.
func refSeqCmp(a, b int32) int32 {
	d := a - b
	if d < 0 {
		d = -d
	}
	if d < 0x3FFFFFFF {
		return a - b
	}
	return b - a
}

func TestSeqBefore(t *testing.T) {
	vals := []uint32{0, 1, 2, 0x3ffffffe, 0x3fffffff, 0x40000000, 0x40000001, 0x7ffffffe, 0x7fffffff, 12345}
	for _, a := range vals {
		for _, b := range vals {
			if got, want := seqBefore(a, b), refSeqCmp(int32(a), int32(b)) < 0; got != want {
				t.Errorf("seqBefore(%#x, %#x) = %v, reference %v", a, b, got, want)
			}
		}
	}
}

// normalizeACK zeroes the fields a's form does not carry: what Decode returns after AppendBinary.
func normalizeACK(a ACK) ACK {
	if a.Form < ACKMedium {
		a.RTT, a.RTTVar, a.AvailBuf = 0, 0, 0
	}
	if a.Form < ACKFull {
		a.RecvRate, a.Capacity = 0, 0
	}
	return a
}
