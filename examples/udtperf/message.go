package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/udtgo/udt/conn"
)

// Message mode (-message SIZE [-ttl D]): udt with Config.MessageMode on both ends (UDT_DGRAM,
// spec §7.2). The client writes SIZE-byte messages for -time (or -bytes), each with a TTL of
// -ttl (0: none; messages with a TTL are sent with the in-order flag off, so that a complete one
// is read before earlier ones under repair), and the server reads them one by one. Every message
// carries its index and the SHA-256 of the rest, which the receiver checks, so both ends hash
// every byte as the stream rows do. Wire: a JSON hello message, the data messages, an end
// message (index msgEnd, JSON totals, in order: it arrives after every message not given up),
// and the receiver's JSON report message.

// msgHeader is a data message's header: 8 bytes of index, 32 of SHA-256 of the rest.
const msgHeader = 8 + sha256.Size

// msgEnd is the index of the end message.
const msgEnd = ^uint64(0)

// msgFlags are -message and -ttl.
type msgFlags struct {
	size sizeFlag
	ttl  time.Duration
}

func (m *msgFlags) register(fs *cmdFlags) {
	fs.Var(&m.size, "message", "udt message mode: send messages of this size (e.g. 64KiB) instead of a stream; the server needs -message too")
	fs.DurationVar(&m.ttl, "ttl", 0, "with -message: each message's time to live (the sender gives it up after that; 0 = none)")
}

func (m *msgFlags) validate() error {
	if m.size == 0 {
		if m.ttl != 0 {
			return errors.New("-ttl needs -message")
		}
		return nil
	}
	if m.size < msgHeader+1 || m.size > 64<<20 {
		return fmt.Errorf("-message %d out of range [%d B, 64 MiB]", int64(m.size), msgHeader+1)
	}
	if m.ttl < 0 {
		return errors.New("-ttl must not be negative")
	}
	return nil
}

// msgHello is the client's first message.
type msgHello struct {
	Size  int   `json:"size"`
	TTLNs int64 `json:"ttl_ns"`
}

// msgTotals is the end message's JSON part.
type msgTotals struct {
	Sent  int64 `json:"sent"`
	Bytes int64 `json:"bytes"`
}

// msgReport is the receiver's report.
type msgReport struct {
	Received   int64  `json:"received"`
	Bytes      int64  `json:"bytes"`
	Corrupt    int64  `json:"corrupt"`    // SHA-256 mismatch or bad header
	Duplicates int64  `json:"duplicates"` // an index read twice
	Discarded  uint64 `json:"discarded"`  // packets of messages given up, discarded unread
	DropReqs   uint64 `json:"drop_requests"`
	CPUNs      int64  `json:"cpu_ns"`
	Error      string `json:"error,omitempty"`
}

// MessageRow is one message-mode transfer: a line of the message table and an object of the
// JSON "messages" array.
type MessageRow struct {
	Backend      string   `json:"backend"`
	Size         int      `json:"size"`   // bytes per message
	TTLms        *float64 `json:"ttl_ms"` // nil: no TTL
	Sent         int64    `json:"sent"`   // messages written
	Delivered    int64    `json:"delivered"`
	Expired      uint64   `json:"expired"` // given up by the sender after their TTL
	Seconds      float64  `json:"seconds"` // first message written to the receiver's report
	MsgsPerSec   float64  `json:"msgs_per_s"`
	DeliveredPct float64  `json:"delivered_pct"`
	DroppedPct   float64  `json:"dropped_pct"`  // not delivered: given up (or lost with them)
	GoodputMbps  float64  `json:"goodput_mbps"` // delivered bytes·8 / seconds / 10^6
	StreamPct    *float64 `json:"stream_pct"`   // self mode: of the same backend's stream goodput
	SenderCPU    *float64 `json:"sender_cpu_s_per_gb"`
	ReceiverCPU  *float64 `json:"receiver_cpu_s_per_gb"`
	Intact       bool     `json:"intact"` // no corrupt or duplicated message
	Error        *string  `json:"error"`
}

// msgPattern is the random content messages are cut from.
var msgPattern = func() []byte {
	b := make([]byte, 1<<20)
	rand.Read(b)
	return b
}()

// fillMessage writes message i of len(m) bytes: index, SHA-256, a slice of msgPattern.
func fillMessage(m []byte, i uint64) {
	body := m[msgHeader:]
	off := int(i*7919) % (len(msgPattern) - len(body) + 1)
	copy(body, msgPattern[off:])
	binary.BigEndian.PutUint64(m, i)
	sum := sha256.Sum256(body)
	copy(m[8:], sum[:])
}

// sendMessages is the client's side of a message-mode transfer on c.
func sendMessages(c *conn.Conn, size int, ttl, dur time.Duration, bytes int64) (MessageRow, error) {
	row := MessageRow{Backend: c.PacerName(), Size: size}
	if ttl > 0 {
		row.TTLms = new(float64(ttl) / 1e6)
	}
	h, _ := json.Marshal(msgHello{Size: size, TTLNs: int64(ttl)})
	if err := c.WriteMessage(h, 0, true); err != nil {
		return row, err
	}
	cpu0, cpuOK := processCPU()
	begin := time.Now()
	m := make([]byte, size)
	var sent, moved int64
	for {
		if bytes > 0 && moved >= bytes || bytes == 0 && time.Since(begin) >= dur {
			break
		}
		fillMessage(m, uint64(sent))
		if err := c.WriteMessage(m, ttl, ttl == 0); err != nil {
			return row, err
		}
		sent++
		moved += int64(size)
	}
	end := make([]byte, 8, 256)
	binary.BigEndian.PutUint64(end, msgEnd)
	tot, _ := json.Marshal(msgTotals{Sent: sent, Bytes: moved})
	if err := c.WriteMessage(append(end, tot...), 0, true); err != nil {
		return row, err
	}
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	n, err := c.ReadMessage(buf)
	if err != nil {
		return row, fmt.Errorf("waiting for the receiver's report: %w", err)
	}
	var rep msgReport
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		return row, fmt.Errorf("bad report from the receiver: %v", err)
	}
	if rep.Error != "" {
		return row, &peerFailure{rep.Error}
	}
	row.Seconds = time.Since(begin).Seconds()
	row.Sent, row.Delivered, row.Expired = sent, rep.Received, c.Stats().Messages.Expired
	if sent > 0 {
		row.DeliveredPct = 100 * float64(rep.Received) / float64(sent)
		row.DroppedPct = 100 - row.DeliveredPct
	}
	if row.Seconds > 0 {
		row.MsgsPerSec = float64(rep.Received) / row.Seconds
		row.GoodputMbps = float64(rep.Bytes) * 8 / row.Seconds / 1e6
	}
	perGB := func(ns int64) *float64 {
		if ns < 0 || rep.Bytes <= 0 {
			return nil
		}
		return new(float64(ns) / float64(rep.Bytes))
	}
	if cpu1, ok := processCPU(); ok && cpuOK {
		row.SenderCPU = perGB(int64(cpu1 - cpu0))
	}
	if rep.CPUNs > 0 {
		row.ReceiverCPU = perGB(rep.CPUNs)
	}
	row.Intact = rep.Corrupt == 0 && rep.Duplicates == 0
	return row, nil
}

// receiveMessages is the server's side: it reads the hello, every message until the end
// message, checks each, and answers with its report.
func receiveMessages(c *conn.Conn, idle time.Duration) (msgReport, error) {
	var rep msgReport
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(idle))
	n, err := c.ReadMessage(buf)
	if err != nil {
		return rep, err
	}
	var h msgHello
	if err := json.Unmarshal(buf[:n], &h); err != nil || h.Size < msgHeader+1 || h.Size > 64<<20 {
		return rep, fmt.Errorf("bad hello message (%d bytes)", n)
	}
	buf = make([]byte, max(h.Size, 4096))
	seen := map[uint64]bool{}
	cpu0, cpuOK := processCPU()
	for {
		c.SetReadDeadline(time.Now().Add(idle))
		n, err := c.ReadMessage(buf)
		if err != nil {
			return rep, err
		}
		m := buf[:n]
		if n >= 8 && binary.BigEndian.Uint64(m) == msgEnd {
			var tot msgTotals
			if err := json.Unmarshal(m[8:], &tot); err != nil {
				return rep, fmt.Errorf("bad end message: %v", err)
			}
			break
		}
		if n != h.Size || sha256.Sum256(m[msgHeader:]) != [sha256.Size]byte(m[8:msgHeader]) {
			rep.Corrupt++
			continue
		}
		i := binary.BigEndian.Uint64(m)
		if seen[i] {
			rep.Duplicates++
			continue
		}
		seen[i] = true
		rep.Received++
		rep.Bytes += int64(n)
	}
	if cpu1, ok := processCPU(); ok && cpuOK {
		rep.CPUNs = int64(cpu1 - cpu0)
	}
	st := c.Stats().Messages
	rep.Discarded, rep.DropReqs = st.Discarded, st.DropReqRecv
	b, _ := json.Marshal(rep)
	if err := c.WriteMessage(b, 0, true); err != nil {
		return rep, err
	}
	c.SetReadDeadline(time.Now().Add(endGrace))
	c.ReadMessage(buf) // the client closes once it has the report (io.EOF)
	return rep, nil
}

// handleMessages serves one message-mode client (server -message).
func (s *server) handleMessages(tc transportConn) error {
	defer tc.Close()
	uc, ok := tc.(*udtConn)
	if !ok {
		return errors.New("message mode needs udt")
	}
	peer := uc.RemoteAddr().String()
	rep, err := receiveMessages(uc.Conn, s.o.tr.handshake+s.o.tr.idle)
	if err != nil && !errors.Is(err, io.EOF) {
		s.logf("udt message client %s: %v", peer, err)
		return err
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if s.o.out.json {
		json.NewEncoder(s.stdout).Encode(struct {
			Messages msgReport `json:"messages"`
		}{rep})
	} else {
		fmt.Fprintf(s.stdout, "[udt %s] messages: %d received (%d bytes), %d corrupt, %d duplicated, %d drop requests\n",
			peer, rep.Received, rep.Bytes, rep.Corrupt, rep.Duplicates, rep.DropReqs)
	}
	if rep.Corrupt > 0 || rep.Duplicates > 0 {
		return fmt.Errorf("%d corrupt and %d duplicated messages from %s", rep.Corrupt, rep.Duplicates, peer)
	}
	return nil
}

// clientMessages dials addr in message mode and runs one message-mode transfer.
func clientMessages(ctx context.Context, addr string, tr *transportFlags, m *msgFlags, lim *limitFlags) (MessageRow, error) {
	t := *tr
	t.message = true
	tc, err := dialTransport(ctx, "udt", addr, &t)
	if err != nil {
		return MessageRow{}, err
	}
	defer tc.Close()
	return sendMessages(tc.(*udtConn).Conn, int(m.size), m.ttl, lim.time, int64(lim.bytes))
}

// runMessageClient is `udtperf client -message SIZE`.
func runMessageClient(o *clientOptions, stdout io.Writer) error {
	row, err := clientMessages(context.Background(), o.connect, &o.tr, &o.msg, &o.limit)
	if err != nil {
		return explain(err, "server", "udt", o.connect, &o.tr)
	}
	if o.out.json {
		return writeMessagesJSON(stdout, nil, []MessageRow{row})
	}
	writeMessageTable(stdout, []MessageRow{row})
	if !row.Intact {
		return errors.New("the server read corrupt or duplicated messages")
	}
	return nil
}

// writeMessageTable prints message rows as an aligned table.
func writeMessageTable(w io.Writer, rows []MessageRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "udt messages/backend\tsize\tttl ms\tgoodput Mbit/s\tmsgs/s\tdelivered %\tdropped %\tof stream %\tsnd CPU s/GB\trcv CPU s/GB\tintact\t")
	for i := range rows {
		r := &rows[i]
		if r.Error != nil {
			fmt.Fprintf(tw, "msg/%s\tfailed: %s\t\t\t\t\t\t\t\t\t\t\n", r.Backend, *r.Error)
			continue
		}
		ok := "ok"
		if !r.Intact {
			ok = "CORRUPT"
		}
		ttl := "none"
		if r.TTLms != nil {
			ttl = fmt.Sprintf("%.0f", *r.TTLms)
		}
		fmt.Fprintf(tw, "msg/%s\t%d\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Backend, r.Size, ttl,
			r.GoodputMbps, r.MsgsPerSec, r.DeliveredPct, r.DroppedPct, fmtOpt(r.StreamPct, "%.0f"),
			fmtOpt(r.SenderCPU, "%.2f"), fmtOpt(r.ReceiverCPU, "%.2f"), ok)
	}
	tw.Flush()
}

// writeMessagesJSON prints {"results": rows, "messages": msgs} as one JSON document.
func writeMessagesJSON(w io.Writer, rows []Row, msgs []MessageRow) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Results  []Row        `json:"results"`
		Messages []MessageRow `json:"messages"`
	}{rows, msgs})
}

// selfMessageRow runs one self-mode message row for pacer backend: a child receiver (the hidden
// server with -message), this process as the sender.
func selfMessageRow(exe string, o *selfOptions, backend string, stderr io.Writer) (MessageRow, error) {
	tr := o.tr
	tr.pacer = backend
	cmd := exec.Command(exe, selfServerCmd, "-listen", "127.0.0.1:0", "-proto", "udt", "-pacer", tr.pacer,
		"-cc", tr.cc, "-strict="+strconv.FormatBool(tr.strict), "-mss", strconv.Itoa(tr.mss),
		"-handshake-timeout", tr.handshake.String(), "-idle-timeout", tr.idle.String(), "-message")
	child, addr, err := startReceiver(cmd, stderr)
	if err != nil {
		return MessageRow{}, err
	}
	row, err := clientMessages(context.Background(), addr, &tr, &o.msg, &o.limit)
	return row, child.finish(err)
}

// selfMessages runs the message row after the stream row of the same backend and compares the
// two goodputs; ok is false if it failed or a message was corrupt.
func selfMessages(exe string, o *selfOptions, backend string, stream *Row, stderr io.Writer) (MessageRow, bool) {
	m, err := selfMessageRow(exe, o, backend, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "udtperf: msg/%s: %v\n", backend, err)
		m.Backend, m.Size = backend, int(o.msg.size)
		m.Error = new(err.Error())
		return m, false
	}
	if stream.Error == nil && stream.GoodputMbps > 0 {
		m.StreamPct = new(100 * m.GoodputMbps / stream.GoodputMbps)
	}
	return m, m.Intact
}
