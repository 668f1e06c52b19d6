package congestion

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// byteReader hands out fuzz input as numbers; past the end it returns zeros.
type byteReader []byte

func (r *byteReader) u64(n int) uint64 {
	var b [8]byte
	k := copy(b[:n], *r)
	*r = (*r)[k:]
	return binary.LittleEndian.Uint64(b[:])
}

// scaled returns a value that is sometimes tiny, sometimes huge or negative: a 16-bit mantissa
// shifted left by a fuzz-chosen amount, with a fuzz-chosen sign.
func (r *byteReader) scaled() int64 {
	m, sh := int64(r.u64(2)), r.u64(1)
	v := m << (sh % 48)
	if sh&0x80 != 0 {
		v = -v
	}
	return v
}

// drive decodes events from data, feeds them to c and calls check after each.
func drive(data []byte, c Controller, check func(step int, s State)) {
	r := byteReader(data)
	now := t0
	isn := uint32(r.u64(4))
	c.Init(now, Params{MSS: int(int16(r.u64(2))), FlowWindow: int(r.scaled()), ISN: isn})
	cur := isn
	check(-1, c.State())
	for step := 0; len(r) > 0 && step < 2000; step++ {
		kind := r.u64(1)
		now = now.Add(time.Duration(int16(r.u64(2))) * 100 * time.Microsecond) // may go backwards
		cur += uint32(r.u64(1))
		switch kind % 6 {
		case 0, 1:
			c.OnACK(now, ACK{
				Seq:       cur - uint32(r.u64(2)),
				RTT:       time.Duration(r.scaled()),
				RTTVar:    time.Duration(r.scaled()),
				RecvRate:  int(r.scaled()),
				Bandwidth: int(r.scaled()),
				CurrSeq:   cur,
			})
		case 2:
			ranges := make([]Range, r.u64(1)%4)
			for i := range ranges {
				first := cur - uint32(r.u64(2))
				ranges[i] = Range{first, first + uint32(r.u64(1))}
			}
			c.OnLoss(now, Loss{Ranges: ranges, CurrSeq: cur})
		case 3:
			c.OnTimeout(now)
		case 4:
			c.OnPacketSent(now, uint32(r.u64(4)), int(int16(r.u64(2))))
		case 5:
			c.OnPacketReceived(now, uint32(r.u64(4)), int(int16(r.u64(2))))
		}
		check(step, c.State())
	}
}

func fuzzSeeds(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		b := make([]byte, 64+rng.IntN(1024))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xf8, 0xff, 0xff, 0x7f, 0xdc, 0x05, 0x40, 0, 0})
}

// checkNativeState fails t unless s is a state the native algorithm may
// report: Period in (0, 1 s] (0 would mean unpaced), Window 16 to NoWindowLimit, ACK period SYN and nothing else.
func checkNativeState(t *testing.T, step int, s State) {
	t.Helper()
	if s.Period <= 0 || s.Period > time.Second {
		t.Fatalf("step %d: Period %v outside (0, 1s]", step, s.Period)
	}
	if math.IsNaN(s.Window) || s.Window < 16 || s.Window > NoWindowLimit {
		t.Fatalf("step %d: Window %v, want 16 to NoWindowLimit", step, s.Window)
	}
	if s.ACKPeriod != SYN || s.ACKInterval != 0 || s.RTO != 0 {
		t.Fatalf("step %d: State %+v", step, s)
	}
}

func FuzzNative(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		n := NewNative(WithRandSource(rand.NewPCG(1, 2)))
		drive(data, n, func(step int, s State) {
			checkNativeState(t, step, s)
			if n.avgNAKNum < 0 || n.avgNAKNum > 5 || n.decRandom < 1 || n.decRandom > 5 || n.nakCount > 5 {
				t.Fatalf("step %d: AvgNAKNum %d DecRandom %d NAKCount %d", step, n.avgNAKNum, n.decRandom, n.nakCount)
			}
		})
	})
}

func FuzzCapped(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Controller
		r := byteReader(data)
		maxBW := r.scaled()
		switch r.u64(1) % 3 {
		case 0:
			c = NewFixed(r.scaled())
		case 1:
			c = NewNative()
		default:
			c = NewBBR()
		}
		c = WithMaxBandwidth(c, maxBW)
		drive(r, c, func(step int, s State) {
			if s.Period < 0 || math.IsNaN(s.Window) || math.IsInf(s.Window, 0) || s.Window < 1 || s.Window > NoWindowLimit {
				t.Fatalf("step %d: State %+v", step, s)
			}
		})
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"500mbit", "1gbit", "100m", "2.5Gbit", "1e9", "0", ".", "1.5gbps", "9999999999999999tbit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r < 1 || r > MaxRate {
			t.Fatalf("ParseRate(%q) = %d, outside [1, MaxRate]", s, r)
		}
		if back, err := ParseRate(FormatRate(r)); err != nil || back != r {
			t.Fatalf("ParseRate(FormatRate(%d) = %q) = %d, %v", r, FormatRate(r), back, err)
		}
		fac, err := ParseSpec("fixed:" + s)
		if err != nil || fac().(*Fixed).Rate() != r {
			t.Fatalf("ParseSpec(fixed:%s): %v", s, err)
		}
	})
}

// FuzzBBR feeds BBR hostile event streams, delivery samples included (negative, huge, out of
// order in time): its State stays a valid decision (Period in [1 ns, 1 s], Window in [4,
// NoWindowLimit], no NaN) and its model finite.
func FuzzBBR(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 2)))
		r := byteReader(data)
		now := t0
		b.Init(now, Params{MSS: int(int16(r.u64(2)))})
		var total int64
		for step := 0; len(r) > 0 && step < 2000; step++ {
			now = now.Add(time.Duration(int16(r.u64(2))) * 100 * time.Microsecond) // may go backwards
			switch r.u64(1) % 4 {
			case 0, 1:
				newly := r.scaled()
				total += newly
				b.OnDelivery(now, Delivery{
					Delivered: r.scaled(), Interval: time.Duration(r.scaled()), AppLimited: r.u64(1)&1 == 1,
					RTT: time.Duration(r.scaled()), PriorDelivered: total - r.scaled(), TxInFlight: r.scaled(),
					LostSinceSent: r.scaled(), NewlyDelivered: newly, NewlyAcked: r.scaled(), NewlyLost: r.scaled(),
					LostSentLast: now.Add(-time.Duration(r.scaled())), LostTxInFlight: r.scaled(),
					TotalDelivered: total, InFlight: r.scaled(), PriorInFlight: r.scaled(),
					CwndLimited: r.u64(1)&1 == 1, PacketSize: int(int16(r.u64(2))),
				})
			case 2:
				b.OnPacketSent(now, uint32(r.u64(4)), int(int16(r.u64(2))))
			case 3:
				b.OnTimeout(now)
			}
			s := b.State()
			if s.Period < time.Nanosecond || s.Period > time.Second || math.IsNaN(s.Window) || s.Window < bbrMinPipePackets || s.Window > NoWindowLimit {
				t.Fatalf("step %d: State %+v", step, s)
			}
			if math.IsNaN(b.bw) || math.IsNaN(b.cwnd) || math.IsNaN(b.pacingRate) || math.IsNaN(b.inflightHi) {
				t.Fatalf("step %d: NaN in the model: bw %v cwnd %v pacing %v inflight_hi %v", step, b.bw, b.cwnd, b.pacingRate, b.inflightHi)
			}
		}
	})
}
