package rtt

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEstimatorInitial(t *testing.T) {
	var e Estimator
	if e.RTT() != 100*time.Millisecond || e.RTTVar() != 50*time.Millisecond || e.RTTMicros() != 100000 || e.RTTVarMicros() != 50000 {
		t.Fatalf("initial %v %v", e.RTT(), e.RTTVar())
	}
	if e.Timeout() != 300*time.Millisecond {
		t.Fatalf("timeout %v", e.Timeout())
	}
}

func TestEstimatorReferenceSequence(t *testing.T) {
	// Hand-computed with the 4.11 integer formulas (RTTVar first, from the old RTT).
	var e Estimator
	steps := []struct{ sample, rtt, rttVar int64 }{
		{20000, 90000, 57500},     // var (150000+80000)/4, rtt (700000+20000)/8
		{20000, 81250, 60625},     // var (172500+70000)/4, rtt (630000+20000)/8
		{81250, 81250, 45468},     // var 181875/4 = 45468.75 → 45468
		{0, 71093, 54413},         // var (136404+81250)/4 = 54413.5, rtt 568750/8 = 71093.75
		{1000001, 187206, 273036}, // var (163239+928908)/4, rtt (497651+1000001)/8
	}
	for i, s := range steps {
		e.UpdateMicros(uint32(s.sample))
		if int64(e.RTTMicros()) != s.rtt || int64(e.RTTVarMicros()) != s.rttVar {
			t.Fatalf("step %d: rtt %d var %d want %d %d", i, e.RTTMicros(), e.RTTVarMicros(), s.rtt, s.rttVar)
		}
	}
}

func TestEstimatorMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var e Estimator
	rtt, rttVar := int32(100000), int32(50000) // the reference's int fields
	for range 100000 {
		s := int32(r.IntN(2_000_000))
		d := s - rtt
		if d < 0 {
			d = -d
		}
		rttVar = (rttVar*3 + d) >> 2
		rtt = (rtt*7 + s) >> 3
		e.Update(time.Duration(s)*time.Microsecond + 999*time.Nanosecond) // truncated to µs
		if e.RTTMicros() != uint32(rtt) || e.RTTVarMicros() != uint32(rttVar) {
			t.Fatalf("got %d/%d want %d/%d", e.RTTMicros(), e.RTTVarMicros(), rtt, rttVar)
		}
	}
}

func TestEstimatorHostile(t *testing.T) {
	var e Estimator
	e.Update(-time.Second)
	if e.RTT() != InitialRTT {
		t.Fatal("negative sample used")
	}
	for range 1000 {
		e.UpdateMicros(0xFFFFFFFF)
	}
	if e.RTT() > MaxSample || e.RTT() < MaxSample-time.Millisecond || e.RTTVar() < 0 {
		t.Fatalf("clamping: %v %v", e.RTT(), e.RTTVar())
	}
}

func TestHistory(t *testing.T) {
	h := NewHistory(4)
	if _, _, ok := h.Acknowledge(1, t0); ok {
		t.Fatal("found in empty history")
	}
	var nos []uint32
	for i := range 6 {
		nos = append(nos, h.Store(seqno.Seq(100+i), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	if nos[0] != 1 || nos[5] != 6 || h.Len() != 4 || h.Next() != 7 {
		t.Fatalf("numbers %v len %d", nos, h.Len())
	}
	// 1 and 2 were overwritten.
	for _, k := range []uint32{0, 1, 2, 7, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF} {
		if _, _, ok := h.Acknowledge(k, t0); ok {
			t.Fatalf("ACK2 %d accepted", k)
		}
	}
	rtt, ack, ok := h.Acknowledge(4, t0.Add(10*time.Millisecond))
	if !ok || rtt != 7*time.Millisecond || ack != 103 {
		t.Fatalf("ACK2 4: %v %v %v", rtt, ack, ok)
	}
	// 3 and 4 are gone (older or equal), 5 and 6 remain.
	if _, _, ok := h.Acknowledge(3, t0); ok || h.Len() != 2 {
		t.Fatal("older entry survived")
	}
	if _, _, ok := h.Acknowledge(4, t0); ok {
		t.Fatal("replayed ACK2 accepted")
	}
	if rtt, ack, ok := h.Acknowledge(6, t0); !ok || rtt != 0 || ack != 105 || h.Len() != 0 {
		t.Fatalf("ACK2 6 with time going backwards: %v %v %v", rtt, ack, ok)
	}
}

func TestHistoryWrap(t *testing.T) {
	h := NewHistory(DefaultHistory)
	h.head, h.tail = MaxAckNo-3, MaxAckNo-3 // next number: MaxAckNo−2
	var nos []uint32
	for i := range 6 {
		nos = append(nos, h.Store(seqno.MaxSeq.Add(i), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	want := []uint32{MaxAckNo - 2, MaxAckNo - 1, MaxAckNo, 1, 2, 3}
	for i := range want {
		if nos[i] != want[i] {
			t.Fatalf("numbers %v want %v", nos, want)
		}
	}
	if _, ack, ok := h.Acknowledge(MaxAckNo, t0.Add(time.Second)); !ok || ack != seqno.MaxSeq.Add(2) {
		t.Fatalf("ACK2 MaxAckNo: %v %v", ack, ok)
	}
	if rtt, ack, ok := h.Acknowledge(2, t0.Add(time.Second)); !ok || ack != seqno.MaxSeq.Add(4) || rtt != time.Second-4*time.Millisecond {
		t.Fatalf("ACK2 2 after wrap: %v %v %v", rtt, ack, ok)
	}
	if _, _, ok := h.Acknowledge(1, t0); ok {
		t.Fatal("older after wrap accepted")
	}
}

// FuzzHistory checks the history against a map model under arbitrary stores
// and ACK2 numbers.
func FuzzHistory(f *testing.F) {
	f.Add(uint16(8), uint64(0), []byte{0, 0, 0, 1, 1, 0, 2, 7})
	f.Add(uint16(1024), uint64(MaxAckNo-5), []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 1, 250})
	f.Fuzz(func(t *testing.T, size uint16, start uint64, ops []byte) {
		n := int(size%2048) + 1
		h := NewHistory(n)
		start %= 4 * MaxAckNo
		h.head, h.tail = start, start
		type rec struct {
			idx uint64
			ack seqno.Seq
			at  time.Time
		}
		live := map[uint32]rec{}
		now := t0
		for i := 0; i+1 < len(ops); i += 2 {
			now = now.Add(time.Millisecond)
			if ops[i]%2 == 0 {
				idx := h.head
				ack := seqno.Seq(idx)
				no := h.Store(ack, now)
				if no == 0 || no > MaxAckNo {
					t.Fatalf("bad ACK number %d", no)
				}
				live[no] = rec{idx, ack, now}
				for k, r := range live {
					if h.head-r.idx > uint64(n) {
						delete(live, k)
					}
				}
				continue
			}
			// ACK2 for a recent number, or a wild one.
			k := h.Next() - 1 - uint32(ops[i+1]%16)
			if ops[i+1] >= 200 {
				k = uint32(ops[i+1]) << 24
			}
			rtt, ack, ok := h.Acknowledge(k, now)
			r, want := live[k]
			if ok != want || ok && (ack != r.ack || rtt != now.Sub(r.at)) {
				t.Fatalf("Acknowledge(%d) = %v %v %v, model %v %+v", k, rtt, ack, ok, want, r)
			}
			if ok {
				for kk, rr := range live {
					if rr.idx <= r.idx {
						delete(live, kk)
					}
				}
			}
			if h.Len() != len(live) {
				t.Fatalf("Len %d model %d", h.Len(), len(live))
			}
		}
	})
}

func BenchmarkHistory(b *testing.B) {
	h := NewHistory(DefaultHistory)
	var e Estimator
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		no := h.Store(seqno.Seq(i), now)
		now = now.Add(time.Millisecond)
		rtt, _, ok := h.Acknowledge(no, now)
		if !ok {
			b.Fatal("lost")
		}
		e.Update(rtt)
	}
}

func TestEstimatorSetAndMeasured(t *testing.T) {
	var e Estimator
	if e.Measured() {
		t.Fatal("zero value measured")
	}
	e.Set(800*time.Microsecond+999, 400*time.Microsecond)
	if !e.Measured() || e.RTT() != 800*time.Microsecond || e.RTTVar() != 400*time.Microsecond {
		t.Fatalf("Set: %v %v %v", e.Measured(), e.RTT(), e.RTTVar())
	}
	e.UpdateMicros(1600) // var (1200+800)/4, rtt (5600+1600)/8
	if e.RTTMicros() != 900 || e.RTTVarMicros() != 500 {
		t.Fatalf("after Set+Update: %d %d", e.RTTMicros(), e.RTTVarMicros())
	}
	e.Set(-time.Second, time.Hour)
	if e.RTT() != 0 || e.RTTVar() != MaxSample {
		t.Fatalf("Set clamps: %v %v", e.RTT(), e.RTTVar())
	}
	var u Estimator
	u.Update(time.Millisecond)
	if !u.Measured() {
		t.Fatal("Update must mark measured")
	}
	var n Estimator
	n.Update(-time.Millisecond)
	if n.Measured() {
		t.Fatal("an ignored negative sample is not a measurement")
	}
}
