package packet

import "testing"

// The hot-path benchmarks report allocs/op (must be 0) and packets/s.

func BenchmarkDataDecode(b *testing.B) {
	x := Data{Seq: 12345, Position: PosMiddle, MsgNo: 7, Timestamp: 99, DstSocketID: 0x10029d60,
		Payload: make([]byte, MaxPayload(DefaultMSS))}
	raw, _ := x.AppendBinary(nil)
	var d Data
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := d.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDataPutHeader(b *testing.B) {
	buf := make([]byte, 1472)
	d := Data{Seq: 12345, Position: PosMiddle, MsgNo: 7, Timestamp: 99, DstSocketID: 0x10029d60}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Seq = uint32(i) & MaxSeqNo
		if err := d.PutHeader(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDataAppend(b *testing.B) {
	buf := make([]byte, 0, 1472)
	d := Data{Seq: 12345, Position: PosMiddle, MsgNo: 7, Timestamp: 99, DstSocketID: 0x10029d60,
		Payload: make([]byte, MaxPayload(DefaultMSS))}
	b.ReportAllocs()
	b.SetBytes(int64(d.Len()))
	for b.Loop() {
		var err error
		if buf, err = d.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkACKDecode(b *testing.B) {
	x := ACK{ControlHeader: ControlHeader{DstSocketID: 5}, AckSeq: 9, Form: ACKFull, AckNo: 1234, RTT: 100000,
		RTTVar: 50000, AvailBuf: 8175, RecvRate: 500000, Capacity: 1000}
	raw, _ := x.AppendBinary(nil)
	var a ACK
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkACKAppend(b *testing.B) {
	buf := make([]byte, 0, 64)
	a := ACK{ControlHeader: ControlHeader{DstSocketID: 5}, AckSeq: 9, Form: ACKFull, AckNo: 1234, RTT: 100000,
		RTTVar: 50000, AvailBuf: 8175, RecvRate: 500000, Capacity: 1000}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = a.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNAKDecode(b *testing.B) {
	x := NAK{Ranges: []SeqRange{{1, 1}, {5, 9}, {20, 20}, {30, 100}}}
	raw, _ := x.AppendBinary(nil)
	n := NAK{Ranges: make([]SeqRange, 0, MaxNAKRanges(DefaultMSS))}
	b.ReportAllocs()
	for b.Loop() {
		if err := n.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	x := ACK{ControlHeader: ControlHeader{DstSocketID: 5}, Form: ACKLight, AckNo: 1}
	raw, _ := x.AppendBinary(nil)
	b.ReportAllocs()
	for b.Loop() {
		if !IsControl(raw) {
			b.Fatal("not control")
		}
		if t, err := Type(raw); err != nil || t != TypeACK {
			b.Fatal(err)
		}
		if id, err := DestSocketID(raw); err != nil || id != 5 {
			b.Fatal(err)
		}
	}
}

// TestZeroAlloc pins the zero-allocation contract of the hot path with testing.AllocsPerRun
// (a count, not a timing, so it is deterministic).
func TestZeroAlloc(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation")
	}
	dx := Data{Seq: 1, MsgNo: 1, Payload: make([]byte, 1456)}
	draw, _ := dx.AppendBinary(nil)
	ax := ACK{Form: ACKFull, AckNo: 1}
	araw, _ := ax.AppendBinary(nil)
	nx := NAK{Ranges: []SeqRange{{1, 1}, {5, 9}}}
	nraw, _ := nx.AppendBinary(nil)
	hx := Handshake{Version: Version}
	hraw, _ := hx.AppendBinary(nil)
	buf := make([]byte, 0, 1500)
	var (
		d Data
		a ACK
		h Handshake
		k ACK2
		n = NAK{Ranges: make([]SeqRange, 0, 8)}
	)
	for name, f := range map[string]func(){
		"Data.Decode":    func() { _ = d.Decode(draw) },
		"Data.Append":    func() { buf, _ = dx.AppendBinary(buf[:0]) },
		"Data.PutHeader": func() { _ = dx.PutHeader(buf[:16]) },
		"ACK.Decode":     func() { _ = a.Decode(araw) },
		"ACK.Append":     func() { buf, _ = ax.AppendBinary(buf[:0]) },
		"NAK.Decode":     func() { _ = n.Decode(nraw) },
		"NAK.Append":     func() { buf, _ = nx.AppendBinary(buf[:0]) },
		"Handshake":      func() { _ = h.Decode(hraw); buf, _ = h.AppendBinary(buf[:0]) },
		"ACK2":           func() { _ = k.Decode(araw); buf, _ = k.AppendBinary(buf[:0]) },
		"rejects":        func() { _ = d.Decode(araw); _ = a.Decode(draw); _ = n.Decode(araw[:17]) },
	} {
		if got := testing.AllocsPerRun(100, f); got != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, got)
		}
	}
}
