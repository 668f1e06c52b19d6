package packet

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// seedVectors adds the captured datagrams for which keep returns true, plus a few hand-made edge cases.
func seedVectors(f *testing.F, keep func(b []byte) bool) {
	for _, v := range loadVectors(f) {
		if keep(v.raw) {
			f.Add(v.raw)
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))
	f.Add(ctrlPkt(TypeNAK, 0, 1, 0x80000001))
	f.Add(ctrlPkt(TypeNAK, 0, 1, 0xfffffffe, 1, 7, 0x80000007, 7))
	f.Add(ctrlPkt(TypeACK, 0, 1, 0x80000000))
	f.Add(ctrlPkt(TypeMsgDropRequest, 1, 1, 5, 9))
	f.Add(ctrlPkt(TypeUserDefined, 1, 1)[:16])
}

func isType(t ControlType) func([]byte) bool {
	return func(b []byte) bool { typ, err := Type(b); return err == nil && typ == t }
}

// FuzzData: Data.Decode never panics; every decodable input re-encodes to itself (the data encoding
// is canonical: every bit of the header is a field), via AppendBinary and via PutHeader.
func FuzzData(f *testing.F) {
	seedVectors(f, func(b []byte) bool { return !IsControl(b) })
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Data
		if err := d.Decode(b); err != nil {
			if len(b) >= HeaderSize && !IsControl(b) {
				t.Fatalf("valid data rejected: %v", err)
			}
			return
		}
		enc, err := d.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("encode(decode(b)) = %x, %v; want %x", enc, err, b)
		}
		hdr := make([]byte, HeaderSize)
		if err := d.PutHeader(hdr); err != nil || !bytes.Equal(hdr, b[:HeaderSize]) {
			t.Fatalf("PutHeader = %x, %v", hdr, err)
		}
	})
}

// FuzzDataEncode: for every field value that encodes, decode(encode(x)) == x; values that do not
// fit are refused with ErrFieldRange.
func FuzzDataEncode(f *testing.F) {
	f.Add(uint32(0x2a4df00f), uint8(2), false, uint32(1), uint32(3945), uint32(0x10029d60), []byte("x"))
	f.Add(uint32(MaxSeqNo), uint8(3), true, uint32(MaxMsgNo), ^uint32(0), ^uint32(0), []byte{})
	f.Add(uint32(1<<31), uint8(4), true, uint32(1<<29), uint32(0), uint32(0), []byte(nil))
	f.Fuzz(func(t *testing.T, seq uint32, ff uint8, o bool, msg, ts, dst uint32, payload []byte) {
		x := Data{Seq: seq, Position: Position(ff), InOrder: o, MsgNo: msg, Timestamp: ts, DstSocketID: dst,
			Payload: payload}
		enc, err := x.AppendBinary(nil)
		fits := seq <= MaxSeqNo && msg <= MaxMsgNo && ff <= 3
		if !fits {
			if err != ErrFieldRange {
				t.Fatalf("out-of-range %+v encoded: %v", x, err)
			}
			return
		}
		if err != nil || len(enc) != x.Len() {
			t.Fatalf("%+v: %v", x, err)
		}
		var y Data
		if err := y.Decode(enc); err != nil {
			t.Fatal(err)
		}
		if y.Seq != x.Seq || y.Position != x.Position || y.InOrder != x.InOrder || y.MsgNo != x.MsgNo ||
			y.Timestamp != x.Timestamp || y.DstSocketID != x.DstSocketID || !bytes.Equal(y.Payload, x.Payload) {
			t.Fatalf("decode(encode(%+v)) = %+v", x, y)
		}
	})
}

// FuzzHandshake: Handshake.Decode never panics; exactly the 64-byte type-0 control packets decode,
// and they re-encode to themselves (every body word is a field).
func FuzzHandshake(f *testing.F) {
	seedVectors(f, isType(TypeHandshake))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Handshake
		err := h.Decode(b)
		want := len(b) == HandshakeSize && IsControl(b) && isType(TypeHandshake)(b)
		if (err == nil) != want {
			t.Fatalf("Decode(%d bytes) = %v", len(b), err)
		}
		if err != nil {
			return
		}
		enc, err := h.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("encode(decode(b)) = %x, %v; want %x", enc, err, b)
		}
		var h2 Handshake
		if err := h2.Decode(enc); err != nil || h2 != h {
			t.Fatalf("decode(encode(x)) = %+v, %v; want %+v", h2, err, h)
		}
	})
}

// FuzzACK: ACK.Decode never panics; decode(encode(x)) == x for every decoded x, and bodies of
// exactly 1, 4 or 6 words re-encode byte for byte (longer bodies drop the words past the sixth).
func FuzzACK(f *testing.F) {
	seedVectors(f, isType(TypeACK))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a ACK
		if err := a.Decode(b); err != nil {
			return
		}
		enc, err := a.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", a, err)
		}
		if n := len(b) - HeaderSize; n == 4 || n == 16 || n == 24 {
			if !bytes.Equal(enc, b) {
				t.Fatalf("encode(decode(b)) = %x; want %x", enc, b)
			}
		} else if !bytes.Equal(enc, b[:HeaderSize+24]) {
			t.Fatalf("long ACK re-encoded as %x from %x", enc, b)
		}
		var a2 ACK
		if err := a2.Decode(enc); err != nil || a2 != a {
			t.Fatalf("decode(encode(x)) = %+v, %v; want %+v", a2, err, a)
		}
	})
}

// FuzzACKEncode: for every field value that encodes, decode(encode(x)) == x up to the fields its form
// does not carry.
func FuzzACKEncode(f *testing.F) {
	f.Add(uint16(0), uint32(0), uint32(0), uint32(1), uint8(1), uint32(5), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0))
	f.Add(uint16(1), uint32(2), uint32(3), uint32(4), uint8(6), uint32(MaxSeqNo), uint32(6), uint32(7), uint32(8), uint32(9), uint32(10))
	f.Add(uint16(0), uint32(0), uint32(0), uint32(0), uint8(4), uint32(1<<31), uint32(6), uint32(7), uint32(8), uint32(9), uint32(10))
	f.Fuzz(func(t *testing.T, ext uint16, ts, dst, seq uint32, form uint8, ackNo, rtt, rttVar, avail, rate, capa uint32) {
		x := ACK{ControlHeader: ControlHeader{ext, ts, dst}, AckSeq: seq, Form: ACKForm(form), AckNo: ackNo,
			RTT: rtt, RTTVar: rttVar, AvailBuf: avail, RecvRate: rate, Capacity: capa}
		enc, err := x.AppendBinary(nil)
		if valid := (form == 1 || form == 4 || form == 6) && ackNo <= MaxSeqNo; !valid {
			if err != ErrFieldRange {
				t.Fatalf("invalid %+v encoded: %v", x, err)
			}
			return
		}
		if err != nil || len(enc) != x.Len() {
			t.Fatalf("%+v: %v", x, err)
		}
		var y ACK
		if err := y.Decode(enc); err != nil || y != normalizeACK(x) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", x, y, err)
		}
	})
}

// FuzzNAK: NAK.Decode never panics and returns at most one range per body word, each valid;
// decode(encode(x)) == x; the encoding is byte-exact unless the input sent a one-number range as a
// pair (x|bit31, x), which re-encodes as the single word x.
func FuzzNAK(f *testing.F) {
	seedVectors(f, isType(TypeNAK))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := NAK{Ranges: make([]SeqRange, 0, 4)}
		if err := n.Decode(b); err != nil {
			return
		}
		if len(n.Ranges) == 0 || len(n.Ranges) > (len(b)-HeaderSize)/4 {
			t.Fatalf("%d ranges from %d body bytes", len(n.Ranges), len(b)-HeaderSize)
		}
		for _, r := range n.Ranges {
			if r.Len() == 0 {
				t.Fatalf("invalid range %v accepted", r)
			}
		}
		enc, err := n.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", n, err)
		}
		if n.Len() != len(enc) {
			t.Fatalf("Len %d, encoded %d", n.Len(), len(enc))
		}
		if len(enc) == len(b) && !bytes.Equal(enc, b) || len(enc) > len(b) {
			t.Fatalf("encode(decode(b)) = %x; want %x", enc, b)
		}
		n2 := NAK{}
		if err := n2.Decode(enc); err != nil || n2.ControlHeader != n.ControlHeader || n2.AddInfo != n.AddInfo ||
			!slices.Equal(n2.Ranges, n.Ranges) {
			t.Fatalf("decode(encode(x)) = %+v, %v; want %+v", n2, err, n)
		}
	})
}

// FuzzNAKEncode: a loss list built from arbitrary words encodes iff every range is valid, and then
// decodes back to the same ranges.
func FuzzNAKEncode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 6, 0, 0, 0, 11})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xfe, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var x NAK
		valid := true
		for i := 0; i+8 <= len(raw); i += 8 {
			r := SeqRange{binary.BigEndian.Uint32(raw[i:]), binary.BigEndian.Uint32(raw[i+4:])}
			valid = valid && r.Len() > 0
			x.Ranges = append(x.Ranges, r)
		}
		enc, err := x.AppendBinary(nil)
		switch {
		case len(x.Ranges) == 0:
			if err != ErrBodyLength {
				t.Fatalf("empty NAK: %v", err)
			}
			return
		case !valid:
			if err != ErrBadRange {
				t.Fatalf("invalid %v encoded: %v", x.Ranges, err)
			}
			return
		case err != nil:
			t.Fatalf("%v: %v", x.Ranges, err)
		}
		var y NAK
		if err := y.Decode(enc); err != nil || !slices.Equal(y.Ranges, x.Ranges) {
			t.Fatalf("decode(encode(%v)) = %v, %v", x.Ranges, y.Ranges, err)
		}
	})
}

// FuzzControl runs every decoder on arbitrary input: none panics, at most the one matching the type
// field succeeds, and each success round-trips: decode(encode(x)) == x, with encode(decode(b)) == b for
// canonical inputs (padded types with exactly 4 zero bytes, drop requests, generic control packets
// with a non-empty body).
func FuzzControl(f *testing.F) {
	seedVectors(f, IsControl)
	for _, t := range []ControlType{TypeCongestionWarning, TypeMsgDropRequest, TypeErrorSignal, TypeUserDefined, 9} {
		f.Add(ctrlPkt(t, 4000, 1, 0))
		f.Add(ctrlPkt(t, 4000, 1)[:16])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Control
		cerr := c.Decode(b)
		if cerr == nil {
			enc, err := c.AppendBinary(nil)
			if err != nil || len(c.Body) > 0 && !bytes.Equal(enc, b) || len(c.Body) == 0 && len(enc) != 20 {
				t.Fatalf("Control: encode(decode(b)) = %x, %v; want %x", enc, err, b)
			}
			if typ, err := Type(b); err != nil || typ != c.Type {
				t.Fatalf("Type = %v, %v; Control says %v", typ, err, c.Type)
			}
		}
		padded := len(b) == HeaderSize+PadSize && bytes.Equal(b[HeaderSize:], []byte{0, 0, 0, 0})
		ok := 0
		check := func(name string, x interface {
			Decode([]byte) error
			AppendBinary([]byte) ([]byte, error)
		}, y interface{ Decode([]byte) error }, eq func() bool, canonical bool) {
			if x.Decode(b) != nil {
				return
			}
			ok++
			if cerr != nil {
				t.Fatalf("%s decoded what Control rejects: %v", name, cerr)
			}
			enc, err := x.AppendBinary(nil)
			if err != nil {
				t.Fatalf("%s: decoded value does not encode: %v", name, err)
			}
			if canonical && !bytes.Equal(enc, b) {
				t.Fatalf("%s: encode(decode(b)) = %x; want %x", name, enc, b)
			}
			if err := y.Decode(enc); err != nil || !eq() {
				t.Fatalf("%s: decode(encode(x)) differs: %v", name, err)
			}
		}
		var ka, ka2 KeepAlive
		check("KeepAlive", &ka, &ka2, func() bool { return ka == ka2 }, padded)
		var sd, sd2 Shutdown
		check("Shutdown", &sd, &sd2, func() bool { return sd == sd2 }, padded)
		var cw, cw2 CongestionWarning
		check("CongestionWarning", &cw, &cw2, func() bool { return cw == cw2 }, padded)
		var a2, a22 ACK2
		check("ACK2", &a2, &a22, func() bool { return a2 == a22 }, padded)
		var es, es2 ErrorSignal
		check("ErrorSignal", &es, &es2, func() bool { return es == es2 }, padded)
		var md, md2 MsgDropRequest
		check("MsgDropRequest", &md, &md2, func() bool { return md == md2 }, true)
		var ud, ud2 UserDefined
		check("UserDefined", &ud, &ud2, func() bool {
			return ud.ControlHeader == ud2.ControlHeader && ud.AddInfo == ud2.AddInfo &&
				(bytes.Equal(ud.Body, ud2.Body) || len(ud.Body) == 0 && bytes.Equal(ud2.Body, make([]byte, 4)))
		}, len(b) > HeaderSize)
		var hs, hs2 Handshake
		check("Handshake", &hs, &hs2, func() bool { return hs == hs2 }, true)
		var ack, ack2 ACK
		check("ACK", &ack, &ack2, func() bool { return ack == ack2 }, false)
		var nak, nak2 NAK
		check("NAK", &nak, &nak2, func() bool { return slices.Equal(nak.Ranges, nak2.Ranges) }, false)
		var d Data
		if d.Decode(b) == nil {
			ok++
		}
		if ok > 1 {
			t.Fatalf("%d decoders accepted %x", ok, b)
		}
	})
}
