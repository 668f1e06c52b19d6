package packet

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// vector is one line of testdata/udt4/*.jsonl (format in testdata/udt4/README.md).
type vector struct {
	I         int    `json:"i"`
	Dir       string `json:"dir"`
	Len       int    `json:"len"`
	Hex       string `json:"hex"`
	Truncated bool   `json:"truncated"`
	Kind      string `json:"kind"`

	file string
	raw  []byte
}

func (v *vector) String() string { return fmt.Sprintf("%s i=%d", v.file, v.I) }

func loadVectors(tb testing.TB) []*vector {
	tb.Helper()
	files, err := filepath.Glob("testdata/udt4/*.jsonl")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no vectors: %v", err)
	}
	var vs []*vector
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			v := &vector{file: filepath.Base(f)}
			if err := json.Unmarshal(sc.Bytes(), v); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			if v.raw, err = hex.DecodeString(v.Hex); err != nil {
				tb.Fatalf("%v: %v", v, err)
			}
			vs = append(vs, v)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return vs
}

// label is a parsed `kind`: the leading words ("data", "ack full", …), the loss list of a NAK, and the
// key=value tokens.
type label struct {
	words []string
	list  []string
	kv    map[string]string
}

func parseKind(kind string) (label, error) {
	l := label{kv: map[string]string{}}
	toks := strings.Fields(kind)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case strings.HasPrefix(t, "["): // NAK loss list: "[a, b-c]" possibly spread over tokens
			for ; ; i++ {
				if i == len(toks) {
					return l, fmt.Errorf("unterminated list in %q", kind)
				}
				e := strings.Trim(toks[i], "[],")
				if e != "" {
					l.list = append(l.list, e)
				}
				if strings.HasSuffix(toks[i], "]") {
					break
				}
			}
		case strings.Contains(t, "="):
			k, v, _ := strings.Cut(t, "=")
			if _, dup := l.kv[k]; dup {
				return l, fmt.Errorf("duplicate key %q in %q", k, kind)
			}
			l.kv[k] = v
		default:
			if len(l.kv) > 0 {
				return l, fmt.Errorf("bare word %q after key=value tokens in %q", t, kind)
			}
			l.words = append(l.words, t)
		}
	}
	return l, nil
}

func hex8(v uint32) string { return fmt.Sprintf("0x%08x", v) }
func dec(v uint32) string  { return strconv.FormatUint(uint64(v), 10) }

// describe decodes raw with the typed decoder its kind names and renders the fields the way the
// README grammar does. It returns the rendered label and the re-encoded packet.
func describe(t *testing.T, v *vector, kindWords []string) (label, []byte) {
	t.Helper()
	l := label{kv: map[string]string{}}
	var enc []byte
	var err error
	ctrl := func(h ControlHeader) {
		l.kv["dst"] = hex8(h.DstSocketID)
		l.kv["ts"] = dec(h.Timestamp)
		if h.Ext != 0 {
			l.kv["ext"] = fmt.Sprintf("0x%04x", h.Ext)
		}
	}
	body := func() string { return hex.EncodeToString(v.raw[HeaderSize:]) }
	switch kindWords[0] {
	case "data":
		var d Data
		if err = d.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"data"}
		l.kv["seq"] = dec(d.Seq)
		l.kv["ff"] = d.Position.String()
		l.kv["o"] = map[bool]string{false: "0", true: "1"}[d.InOrder]
		l.kv["msg"] = dec(d.MsgNo)
		l.kv["ts"] = dec(d.Timestamp)
		l.kv["dst"] = hex8(d.DstSocketID)
		n := len(d.Payload)
		if v.Truncated {
			if n != 48 {
				t.Errorf("%v: truncated vector payload %d bytes, want the 48 captured", v, n)
			}
			n = v.Len - HeaderSize // the label names the real packet's payload
		}
		l.kv["payload"] = strconv.Itoa(n)
		enc, err = d.AppendBinary(nil)
	case "handshake":
		var h Handshake
		if err = h.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"handshake"}
		l.kv["req"] = strconv.Itoa(int(h.ReqType))
		l.kv["ver"] = dec(h.Version)
		l.kv["socktype"] = dec(uint32(h.SocketType))
		l.kv["isn"] = dec(h.ISN)
		l.kv["mss"] = dec(h.MSS)
		l.kv["flightflag"] = dec(h.FlowWindow)
		l.kv["id"] = hex8(h.SocketID)
		l.kv["cookie"] = hex8(h.Cookie)
		l.kv["peerip"] = fmt.Sprintf("%08x.%08x.%08x.%08x", h.PeerIP[0], h.PeerIP[1], h.PeerIP[2], h.PeerIP[3])
		l.kv["addinfo"] = dec(h.AddInfo)
		ctrl(h.ControlHeader)
		enc, err = h.AppendBinary(nil)
	case "ack":
		var a ACK
		if err = a.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"ack", a.Form.String()}
		l.kv["ackseq"] = dec(a.AckSeq)
		l.kv["ackno"] = dec(a.AckNo)
		if a.Form >= ACKMedium {
			l.kv["rtt"] = dec(a.RTT)
			l.kv["rttvar"] = dec(a.RTTVar)
			l.kv["availbuf"] = dec(a.AvailBuf)
		}
		if a.Form == ACKFull {
			l.kv["rcvrate"] = dec(a.RecvRate)
			l.kv["capacity"] = dec(a.Capacity)
		}
		ctrl(a.ControlHeader)
		enc, err = a.AppendBinary(nil)
	case "ack2":
		var a ACK2
		if err = a.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"ack2"}
		l.kv["ackseq"] = dec(a.AckSeq)
		l.kv["body"] = body()
		ctrl(a.ControlHeader)
		enc, err = a.AppendBinary(nil)
	case "nak":
		var n NAK
		if err = n.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"nak"}
		var words []string
		for i := HeaderSize; i < len(v.raw); i += 4 {
			words = append(words, "0x"+hex.EncodeToString(v.raw[i:i+4]))
		}
		l.kv["words"] = "[" + strings.Join(words, ",") + "]"
		for _, r := range n.Ranges {
			if r.First == r.Last {
				l.list = append(l.list, dec(r.First))
			} else {
				l.list = append(l.list, dec(r.First)+"-"+dec(r.Last))
			}
		}
		l.kv["addinfo"] = dec(n.AddInfo)
		ctrl(n.ControlHeader)
		enc, err = n.AppendBinary(nil)
	case "keepalive":
		var k KeepAlive
		if err = k.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"keepalive"}
		l.kv["addinfo"] = dec(k.AddInfo)
		l.kv["body"] = body()
		ctrl(k.ControlHeader)
		enc, err = k.AppendBinary(nil)
	case "shutdown":
		var s Shutdown
		if err = s.Decode(v.raw); err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		l.words = []string{"shutdown"}
		l.kv["addinfo"] = dec(s.AddInfo)
		l.kv["body"] = body()
		ctrl(s.ControlHeader)
		enc, err = s.AppendBinary(nil)
	default:
		t.Fatalf("%v: unknown kind %q", v, v.Kind)
	}
	if err != nil {
		t.Fatalf("%v: re-encode: %v", v, err)
	}
	return l, enc
}

// TestVectors checks every captured UDT 4.11 datagram: it decodes to exactly the fields its kind
// label names (same keys, same values, same leading words, same loss list) and re-encodes byte for
// byte.
func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	counts := map[string]int{}
	for _, v := range vs {
		want, err := parseKind(v.Kind)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		if len(want.words) == 0 {
			t.Fatalf("%v: no kind word in %q", v, v.Kind)
		}
		if v.Truncated {
			if want.words[0] != "data" || len(v.raw) != 64 || v.Len <= 64 {
				t.Fatalf("%v: unexpected truncated vector (%d of %d bytes)", v, len(v.raw), v.Len)
			}
		} else if len(v.raw) != v.Len {
			t.Fatalf("%v: hex holds %d bytes, len says %d", v, len(v.raw), v.Len)
		}
		if IsControl(v.raw) == (want.words[0] == "data") {
			t.Errorf("%v: IsControl = %v for %q", v, IsControl(v.raw), want.words[0])
		}
		got, enc := describe(t, v, want.words)
		counts[strings.Join(got.words, " ")]++
		if !slices.Equal(got.words, want.words) {
			t.Errorf("%v: decoded as %q, label says %q", v, got.words, want.words)
		}
		if !slices.Equal(got.list, want.list) {
			t.Errorf("%v: loss list %q, label says %q", v, got.list, want.list)
		}
		for _, k := range slices.Sorted(maps.Keys(want.kv)) {
			if g, ok := got.kv[k]; !ok {
				t.Errorf("%v: label key %q not decoded", v, k)
			} else if g != want.kv[k] {
				t.Errorf("%v: %s = %s, label says %s", v, k, g, want.kv[k])
			}
		}
		for k := range got.kv {
			if _, ok := want.kv[k]; !ok {
				t.Errorf("%v: decoded key %q=%s missing from label %q", v, k, got.kv[k], v.Kind)
			}
		}
		if !bytes.Equal(enc, v.raw) {
			t.Errorf("%v: re-encoded\n got %x\nwant %x", v, enc, v.raw)
		}
		checkClassifier(t, v)
	}
	// The README's census: 765 data and 151 control datagrams.
	ctrl := len(vs) - counts["data"]
	if counts["data"] != 765 || ctrl != 151 {
		t.Errorf("census: %d data, %d control; README says 765 and 151", counts["data"], ctrl)
	}
	t.Logf("%d vectors: %v", len(vs), counts)
}

// checkClassifier checks Type, DestSocketID and the generic Control decoder against the typed ones.
func checkClassifier(t *testing.T, v *vector) {
	t.Helper()
	dst, err := DestSocketID(v.raw)
	if err != nil || dst != beWord(v.raw, 3) {
		t.Errorf("%v: DestSocketID = %#x, %v", v, dst, err)
	}
	typ, err := Type(v.raw)
	if !IsControl(v.raw) {
		if err != ErrNotControl {
			t.Errorf("%v: Type on data: %v, want ErrNotControl", v, err)
		}
		return
	}
	if err != nil || uint32(typ) != beWord(v.raw, 0)>>16&0x7fff {
		t.Errorf("%v: Type = %v, %v", v, typ, err)
	}
	var c Control
	if err := c.Decode(v.raw); err != nil || c.Type != typ {
		t.Fatalf("%v: Control.Decode: %v (type %v)", v, err, c.Type)
	}
	enc, err := c.AppendBinary(nil)
	if err != nil || !bytes.Equal(enc, v.raw) {
		t.Errorf("%v: Control re-encode %x, %v", v, enc, err)
	}
}

func beWord(b []byte, i int) uint32 {
	return uint32(b[4*i])<<24 | uint32(b[4*i+1])<<16 | uint32(b[4*i+2])<<8 | uint32(b[4*i+3])
}
