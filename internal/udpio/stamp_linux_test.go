package udpio

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReceiveTime checks the kernel receive stamps on every Linux receive path: two datagrams sent
// 30 ms apart but read in one go (the reader "descheduled") keep their 30 ms spacing, each Time
// lies between the send and the read and carries a monotonic reading. Only lower bounds that the
// sleep guarantees are asserted, never an upper bound on a delay.
func TestReceiveTime(t *testing.T) {
	const gap = 30 * time.Millisecond
	for _, rm := range recvModes {
		t.Run(rm.name, func(t *testing.T) {
			su := listen(t, "udp4", "127.0.0.1:0")
			ru := listen(t, "udp4", "127.0.0.1:0")
			s, r := New(su), newConn(ru, rm.opt)
			to := addrOf(ru, "127.0.0.1")
			before := time.Now()
			if _, err := s.WriteBatch(separate(1, 100), to); err != nil {
				t.Fatal(err)
			}
			time.Sleep(gap)
			if _, err := s.WriteBatch(separate(2, 100), to); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // let the second one land before the read
			ms := readN(t, r, 2, 1500)
			after := time.Now()
			if rm.opt.portable {
				for i, m := range ms {
					if !m.Time.IsZero() {
						t.Fatalf("datagram %d: portable path gave Time %v, want zero", i, m.Time)
					}
				}
				return
			}
			for i, m := range ms {
				if m.Time.IsZero() {
					t.Fatalf("datagram %d: no receive Time", i)
				}
				if !strings.Contains(m.Time.String(), " m=") {
					t.Fatalf("datagram %d: Time %v has no monotonic reading", i, m.Time)
				}
				// 1 ms of slack: the stamp is a wall-clock reading mapped onto the monotonic clock.
				if m.Time.Before(before.Add(-time.Millisecond)) || m.Time.After(after) {
					t.Fatalf("datagram %d: Time %v outside [send %v, read %v]", i, m.Time, before, after)
				}
			}
			if d := ms[1].Time.Sub(ms[0].Time); d < gap-time.Millisecond {
				t.Fatalf("stamps %v apart, want ≥ %v (the sender's sleep)", d, gap)
			}
		})
	}
}

// TestReceiveTimeGRORun: the datagrams of one GRO run share the run's stamp.
func TestReceiveTimeGRORun(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	s, r := New(su), New(ru)
	if _, gro, _ := r.Features(); !gro {
		t.Skip("no UDP GRO")
	}
	if n, err := s.WriteBatch(contiguous(20, 1000, 1000, 3), addrOf(ru, "127.0.0.1")); n != 20 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	ms := readN(t, r, 20, 1500)
	if sys(t, r).r.calls != 1 {
		t.Skipf("the kernel did not glue the GSO send into one run (%d reads)", sys(t, r).r.calls)
	}
	for i, m := range ms {
		if m.Time.IsZero() || !m.Time.Equal(ms[0].Time) {
			t.Fatalf("datagram %d: Time %v, want the run's %v", i, m.Time, ms[0].Time)
		}
	}
}

// TestNoStamps: with SO_TIMESTAMPNS left off no Time is reported, and a reused Message loses its
// old one.
func TestNoStamps(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	s, r := New(su), newConn(ru, options{noGRO: true, noStamps: true})
	if _, err := s.WriteBatch(separate(1, 100, 100), addrOf(ru, "127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	msgs := newMsgs(1, 1500)
	msgs[0].Time = time.Now()
	r.pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.ReadBatch(msgs); n != 1 || err != nil {
		t.Fatalf("ReadBatch = %d, %v", n, err)
	}
	if !msgs[0].Time.IsZero() {
		t.Fatalf("Time %v without SO_TIMESTAMPNS", msgs[0].Time)
	}
}

// cmsg builds one control message with data, padded to CmsgSpace.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func timespecBytes(sec, nsec int64) []byte {
	b := make([]byte, sizeofTimespec)
	if sizeofTimespec == 16 {
		binary.NativeEndian.PutUint64(b, uint64(sec))
		binary.NativeEndian.PutUint64(b[8:], uint64(nsec))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(sec))
		binary.NativeEndian.PutUint32(b[4:], uint32(nsec))
	}
	return b
}

func TestParseCmsgs(t *testing.T) {
	seg4 := binary.NativeEndian.AppendUint32(nil, 1400)
	ts := cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespecBytes(1_700_000_000, 123_456_789))
	gro := cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, seg4)
	const want = 1_700_000_000*int64(time.Second) + 123_456_789
	for _, tc := range []struct {
		name  string
		oob   []byte
		seg   int
		ns    int64
		stamp bool
	}{
		{"none", nil, 0, 0, false},
		{"stamp", ts, 0, want, true},
		{"gro", gro, 1400, 0, false},
		{"stamp+gro", append(append([]byte(nil), ts...), gro...), 1400, want, true},
		{"gro+stamp", append(append([]byte(nil), gro...), ts...), 1400, want, true},
		{"bad nsec", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespecBytes(5, 1e9)), 0, 0, false},
		{"short stamp", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, []byte{1, 2, 3}), 0, 0, false},
		{"cut header", ts[:unix.SizeofCmsghdr-1], 0, 0, false},
		{"cut data", ts[:unix.CmsgLen(0)+2], 0, 0, false},
	} {
		seg, ns, ok := parseCmsgs(tc.oob)
		if seg != tc.seg || ok != tc.stamp || (ok && ns != tc.ns) {
			t.Errorf("%s: seg %d stamp %d,%v; want %d %d,%v", tc.name, seg, ns, ok, tc.seg, tc.ns, tc.stamp)
		}
	}
}

func TestStampTime(t *testing.T) {
	t0 := time.Now()
	w := t0.UnixNano()
	if got := stampTime(t0, w-int64(3*time.Millisecond)); got.Sub(t0) != -3*time.Millisecond ||
		!strings.Contains(got.String(), " m=") {
		t.Fatalf("3 ms old stamp: %v (t0 %v)", got, t0)
	}
	if got := stampTime(t0, w+int64(time.Microsecond)); !got.Equal(t0) {
		t.Fatalf("stamp 1 µs ahead: %v, want t0", got)
	}
	for _, age := range []time.Duration{MaxStampAge + 1, -MaxStampAge - 1} {
		if got := stampTime(t0, w-int64(age)); !got.IsZero() {
			t.Fatalf("stamp aged %v: %v, want zero", age, got)
		}
	}
	if got := stampTime(time.Time{}, w); !got.IsZero() {
		t.Fatalf("no read time: %v, want zero", got)
	}
}

// FuzzParseCmsgs: any control-message bytes decode without panicking to a sane result.
func FuzzParseCmsgs(f *testing.F) {
	f.Add(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespecBytes(1, 2)))
	f.Add(cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, []byte{1, 0, 0, 0}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 35, 0, 0, 0})
	f.Fuzz(func(t *testing.T, oob []byte) {
		_, ns, ok := parseCmsgs(oob)
		if ok && (ns < -9e18 || ns > 9e18) {
			t.Fatalf("stamp %d out of range", ns)
		}
		if !ok && ns != 0 {
			t.Fatalf("stamp %d without ok", ns)
		}
		stampTime(time.Now(), ns)
	})
}
