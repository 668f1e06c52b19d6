package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The JSON lines format: the first line describes the connection,
//
//	{"ev":"conn","start":"2026-12-01T10:00:00.123456789Z","local":"198.18.1.2:41000","remote":"198.18.2.2:9000","id":123,"peer_id":456,"mss":1500,"server":false,"cc":"bbr"}
//
// and each further line is one event: "t" (seconds since start), "ev" (Kind.String) and the
// fields the Kind sets, under these names (omitted when zero): seq, last, pkts, ranges, bytes,
// rtt_us, rttvar_us, fwnd, inflight, rate (RecvRate), bw (Bandwidth), period_us, cwnd, late_us,
// interval_us, detail. Durations are in µs with up to three decimals.

// JSONWriter writes a connection's events as JSON lines to w, buffered (Close flushes). It is
// safe for concurrent use and allocates nothing per event.
type JSONWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	c     io.Closer // w's Closer, if any
	start time.Time
	buf   []byte
	err   error
}

// NewJSONWriter writes info's line to w and returns the writer for its events. If w is an
// io.Closer, Close closes it.
func NewJSONWriter(w io.Writer, info ConnInfo) *JSONWriter {
	j := &JSONWriter{w: bufio.NewWriterSize(w, 64<<10), start: info.Start, buf: make([]byte, 0, 512)}
	j.c, _ = w.(io.Closer)
	b := append(j.buf[:0], `{"ev":"conn","start":`...)
	b = appendJSONString(b, info.Start.UTC().Format(time.RFC3339Nano))
	b = appendStringField(b, "local", addrString(info.Local))
	b = appendStringField(b, "remote", addrString(info.Remote))
	b = appendUint(b, "id", uint64(info.LocalID))
	b = appendUint(b, "peer_id", uint64(info.PeerID))
	b = appendInt(b, "mss", int64(info.MSS))
	b = append(b, `,"server":`...)
	b = strconv.AppendBool(b, info.Server)
	b = appendStringField(b, "cc", info.Congestion)
	b = append(b, "}\n"...)
	_, j.err = j.w.Write(b)
	return j
}

func addrString(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// Event writes ev as one line. A write error is kept and returned by Flush and Close.
func (j *JSONWriter) Event(ev Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	j.buf = AppendJSON(j.buf[:0], ev, j.start)
	_, j.err = j.w.Write(j.buf)
}

// Flush writes out what is buffered.
func (j *JSONWriter) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = j.w.Flush()
	}
	return j.err
}

// Close flushes, then closes the underlying writer if it is an io.Closer.
func (j *JSONWriter) Close() error {
	err := j.Flush()
	if j.c != nil {
		if cerr := j.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// AppendJSON appends ev as one JSON line (with its newline) to b; times are seconds since
// start.
func AppendJSON(b []byte, ev Event, start time.Time) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendFloat(b, ev.Time.Sub(start).Seconds(), 'f', 6, 64)
	b = append(b, `,"ev":"`...)
	b = append(b, ev.Kind.String()...)
	b = append(b, '"')
	b = appendUint(b, "seq", uint64(ev.Seq))
	b = appendUint(b, "last", uint64(ev.Last))
	b = appendInt(b, "pkts", int64(ev.Packets))
	b = appendInt(b, "ranges", int64(ev.Ranges))
	b = appendInt(b, "bytes", int64(ev.Bytes))
	b = appendMicros(b, "rtt_us", ev.RTT)
	b = appendMicros(b, "rttvar_us", ev.RTTVar)
	b = appendInt(b, "fwnd", int64(ev.FlowWindow))
	b = appendInt(b, "inflight", int64(ev.InFlight))
	b = appendInt(b, "rate", int64(ev.RecvRate))
	b = appendInt(b, "bw", int64(ev.Bandwidth))
	b = appendMicros(b, "period_us", ev.Period)
	b = appendInt(b, "cwnd", int64(ev.CWnd))
	b = appendMicros(b, "late_us", ev.Late)
	b = appendMicros(b, "interval_us", ev.Interval)
	b = appendStringField(b, "detail", ev.Detail)
	return append(b, "}\n"...)
}

func appendUint(b []byte, name string, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendName(b, name)
	return strconv.AppendUint(b, v, 10)
}

func appendInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = appendName(b, name)
	return strconv.AppendInt(b, v, 10)
}

func appendMicros(b []byte, name string, d time.Duration) []byte {
	if d == 0 {
		return b
	}
	b = appendName(b, name)
	return strconv.AppendFloat(b, float64(d)/1e3, 'f', -1, 64)
}

func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(appendName(b, name), s)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func appendName(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// Reader reads a trace written by JSONWriter.
type Reader struct {
	sc   *bufio.Scanner
	info ConnInfo
	line int
}

// maxLine bounds one line of a trace (an event line is under 400 bytes).
const maxLine = 64 << 10

// NewReader reads the connection line of r and returns a Reader for its events.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{sc: bufio.NewScanner(r)}
	rd.sc.Buffer(make([]byte, 4096), maxLine)
	if !rd.sc.Scan() {
		if err := rd.sc.Err(); err != nil {
			return nil, fmt.Errorf("trace: %v", err)
		}
		return nil, errors.New("trace: empty input")
	}
	rd.line = 1
	var h struct {
		Ev     string `json:"ev"`
		Start  string `json:"start"`
		Local  string `json:"local"`
		Remote string `json:"remote"`
		ID     uint32 `json:"id"`
		PeerID uint32 `json:"peer_id"`
		MSS    int    `json:"mss"`
		Server bool   `json:"server"`
		CC     string `json:"cc"`
	}
	if err := json.Unmarshal(rd.sc.Bytes(), &h); err != nil || h.Ev != "conn" {
		return nil, errors.New(`trace: line 1 is not a connection line ({"ev":"conn",…})`)
	}
	start, err := time.Parse(time.RFC3339Nano, h.Start)
	if err != nil {
		return nil, fmt.Errorf("trace: line 1: bad start time %q", h.Start)
	}
	rd.info = ConnInfo{Start: start, LocalID: h.ID, PeerID: h.PeerID, MSS: h.MSS, Server: h.Server, Congestion: h.CC,
		Local: textAddr(h.Local), Remote: textAddr(h.Remote)}
	return rd, nil
}

// textAddr is an address known only by its text.
type textAddr string

func (a textAddr) Network() string { return "udp" }
func (a textAddr) String() string  { return string(a) }

// Info is the connection line.
func (r *Reader) Info() ConnInfo { return r.info }

// Next returns the next event; io.EOF after the last. A line that is not a valid event is an
// error naming the line (events of kinds this version does not know are skipped).
func (r *Reader) Next() (Event, error) {
	for r.sc.Scan() {
		r.line++
		var l struct {
			T        float64 `json:"t"`
			Ev       string  `json:"ev"`
			Seq      uint32  `json:"seq"`
			Last     uint32  `json:"last"`
			Pkts     int     `json:"pkts"`
			Ranges   int     `json:"ranges"`
			Bytes    int     `json:"bytes"`
			RTT      float64 `json:"rtt_us"`
			RTTVar   float64 `json:"rttvar_us"`
			Fwnd     int     `json:"fwnd"`
			InFlight int     `json:"inflight"`
			Rate     int     `json:"rate"`
			BW       int     `json:"bw"`
			Period   float64 `json:"period_us"`
			CWnd     int     `json:"cwnd"`
			Late     float64 `json:"late_us"`
			Interval float64 `json:"interval_us"`
			Detail   string  `json:"detail"`
		}
		if err := json.Unmarshal(r.sc.Bytes(), &l); err != nil {
			return Event{}, fmt.Errorf("trace: line %d: %v", r.line, err)
		}
		k, ok := ParseKind(l.Ev)
		if !ok {
			continue
		}
		if math.IsNaN(l.T) || math.Abs(l.T) > maxSeconds {
			return Event{}, fmt.Errorf("trace: line %d: time %v out of range", r.line, l.T)
		}
		return Event{
			Time: r.info.Start.Add(time.Duration(math.Round(l.T * 1e9))), Kind: k,
			Seq: l.Seq, Last: l.Last, Packets: l.Pkts, Ranges: l.Ranges, Bytes: l.Bytes,
			RTT: micros(l.RTT), RTTVar: micros(l.RTTVar), FlowWindow: l.Fwnd, InFlight: l.InFlight,
			RecvRate: l.Rate, Bandwidth: l.BW, Period: micros(l.Period), CWnd: l.CWnd, Late: micros(l.Late),
			Interval: micros(l.Interval), Detail: l.Detail,
		}, nil
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, fmt.Errorf("trace: line %d: %v", r.line+1, err)
	}
	return Event{}, io.EOF
}

// maxSeconds bounds event times (a year), so that they convert to time.Duration exactly.
const maxSeconds = 365 * 24 * 3600

// micros converts µs to a Duration, saturating (hostile input must not overflow).
func micros(us float64) time.Duration {
	switch {
	case math.IsNaN(us):
		return 0
	case us > maxSeconds*1e6:
		return maxSeconds * time.Second
	case us < -maxSeconds*1e6:
		return -maxSeconds * time.Second
	}
	return time.Duration(math.Round(us * 1e3))
}
