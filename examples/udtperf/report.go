package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Row is one transfer's result: a line of the table, an object of the JSON "results" array.
// Field names are udtperf's stable JSON schema (README): every key is always present, null
// where it does not apply or is not available.
type Row struct {
	Protocol          string     `json:"protocol"`              // udt, tcp or quic
	Backend           string     `json:"backend"`               // udt pacer backend of the sender; "" for tcp and quic
	CC                *string    `json:"cc"`                    // congestion control: udt's -cc (bbr, udt, fixed:RATE), tcp's kernel algorithm (cubic, bbr…); nil for quic
	Strict            *bool      `json:"strict"`                // udt strict pacing; nil for tcp and quic
	Direction         string     `json:"direction"`             // client->server or server->client
	File              *string    `json:"file"`                  // file mode: the base name; nil otherwise
	ResumedFrom       *int64     `json:"resumed_from"`          // file mode: the byte the upload continued from (0: the whole file); nil otherwise
	Bytes             int64      `json:"bytes"`                 // payload bytes delivered
	Seconds           float64    `json:"seconds"`               // sender's first byte to the receiver's report
	GoodputMbps       float64    `json:"goodput_mbps"`          // bytes·8 / seconds / 10^6
	RetransPct        *float64   `json:"retrans_pct"`           // retransmitted / sent packets, % (quic: declared lost)
	RTTms             *float64   `json:"rtt_ms"`                // sender's smoothed RTT at the end
	SenderCPU         *float64   `json:"sender_cpu_s_per_gb"`   // sender process CPU seconds per 10^9 bytes
	ReceiverCPU       *float64   `json:"receiver_cpu_s_per_gb"` // receiver process CPU seconds per 10^9 bytes
	PktsPerWake       *float64   `json:"pkts_per_wake"`         // udt: mean packets released per pacer wake
	SenderSHA256      string     `json:"sender_sha256"`
	ReceiverSHA256    string     `json:"receiver_sha256"`
	SHA256OK          bool       `json:"sha256_ok"` // digests and byte counts of both ends agree
	Intervals         []Interval `json:"intervals"` // with -interval (maybe empty); nil without
	Error             *string    `json:"error"`     // why the row failed (self mode); nil if it did not
	senderElapsedNs   int64
	receiverElapsedNs int64
}

// udtSettings are a row's cc and strict: both set for udt; for tcp cc is the sender's kernel
// congestion control (nil if unknown) and strict nil; both nil (JSON null) for quic.
func udtSettings(proto, cc string, strict bool) (*string, *bool) {
	switch {
	case proto == "udt":
		return &cc, &strict
	case proto == "tcp" && cc != "":
		return &cc, nil
	}
	return nil, nil
}

// failedRow is a self-mode row for a transfer that failed.
func failedRow(proto, backend, cc string, strict bool, err error) Row {
	r := Row{Protocol: proto, Backend: backend, Direction: "client->server", Error: new(err.Error())}
	r.CC, r.Strict = udtSettings(proto, cc, strict)
	return r
}

// Interval is one -interval line, as seen by the client.
type Interval struct {
	Start        float64  `json:"start"` // seconds since the data phase began
	End          float64  `json:"end"`
	Bytes        int64    `json:"bytes"` // delivered to the receiving application in the interval (a sender learns it from the receiver's progress messages)
	Mbps         float64  `json:"mbps"`
	RTTms        *float64 `json:"rtt_ms"`
	CwndPkts     *float64 `json:"cwnd_pkts"`      // udt, tcp
	CwndBytes    *float64 `json:"cwnd_bytes"`     // quic
	SendPeriodUs *float64 `json:"send_period_us"` // udt sender
	Lost         *float64 `json:"lost"`           // packets lost in the interval (sender: reported by the peer)
	Retrans      *float64 `json:"retrans"`        // packets retransmitted in the interval
}

// makeRow joins the sender's and the receiver's reports.
func makeRow(snd, rcv *report) Row {
	r := Row{
		Protocol: snd.Protocol, Backend: snd.Backend,
		Bytes: rcv.Bytes, Seconds: float64(snd.ElapsedNs) / 1e9,
		RetransPct: snd.Retrans, RTTms: snd.RTTms, PktsPerWake: snd.PerWake,
		SenderSHA256: snd.SHA256, ReceiverSHA256: rcv.SHA256,
		SHA256OK:        snd.SHA256 == rcv.SHA256 && snd.Bytes == rcv.Bytes && snd.SHA256 != "",
		senderElapsedNs: snd.ElapsedNs, receiverElapsedNs: rcv.ElapsedNs,
	}
	if r.Seconds > 0 {
		r.GoodputMbps = float64(r.Bytes) * 8 / r.Seconds / 1e6
	}
	perGB := func(ns int64) *float64 {
		if ns < 0 || r.Bytes <= 0 {
			return nil
		}
		v := float64(ns) / 1e9 / (float64(r.Bytes) / 1e9)
		return &v
	}
	r.SenderCPU, r.ReceiverCPU = perGB(snd.CPUNs), perGB(rcv.CPUNs)
	r.CC, r.Strict = udtSettings(snd.Protocol, snd.CC, snd.Strict)
	return r
}

// name is the row's label in tables: udt/hybrid (the pacer backend), tcp/cubic (the kernel's
// congestion control), quic.
func (r *Row) name() string {
	switch {
	case r.Backend != "":
		return r.Protocol + "/" + r.Backend
	case r.Protocol == "tcp" && r.CC != nil:
		return r.Protocol + "/" + *r.CC
	}
	return r.Protocol
}

// writeTable prints rows as an aligned table.
func writeTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol/backend\tgoodput Mbit/s\tretrans %\tRTT ms\tsnd CPU s/GB\trcv CPU s/GB\tpkts/wake\tsha256\t")
	for i := range rows {
		r := &rows[i]
		if r.Error != nil {
			fmt.Fprintf(tw, "%s\tfailed: %s\t\t\t\t\t\t\t\n", r.name(), *r.Error)
			continue
		}
		ok := "ok"
		if !r.SHA256OK {
			ok = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.name(), r.GoodputMbps,
			fmtOpt(r.RetransPct, "%.3f"), fmtOpt(r.RTTms, "%.3f"), fmtOpt(r.SenderCPU, "%.2f"),
			fmtOpt(r.ReceiverCPU, "%.2f"), fmtOpt(r.PktsPerWake, "%.1f"), ok)
	}
	tw.Flush()
}

func fmtOpt(v *float64, f string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(f, *v)
}

// writeJSON prints {"results": rows} as one JSON document.
func writeJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "client->server", not "client-\u003eserver"
	return enc.Encode(struct {
		Results []Row `json:"results"`
	}{rows})
}

// writeJSONLine prints {"results": [row]} on one line (the server's per-transfer document).
func writeJSONLine(w io.Writer, row Row) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Results []Row `json:"results"`
	}{[]Row{row}})
}

// intervalLine formats one interval for text output.
func intervalLine(prefix string, iv *Interval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s[%6.2f-%6.2f s] %9.2f MB %9.1f Mbit/s", prefix, iv.Start, iv.End, float64(iv.Bytes)/1e6, iv.Mbps)
	if iv.RTTms != nil {
		fmt.Fprintf(&b, "  rtt %.3f ms", *iv.RTTms)
	}
	if iv.CwndPkts != nil {
		fmt.Fprintf(&b, "  cwnd %.0f pkts", *iv.CwndPkts)
	}
	if iv.CwndBytes != nil {
		fmt.Fprintf(&b, "  cwnd %.0f kB", *iv.CwndBytes/1e3)
	}
	if iv.SendPeriodUs != nil {
		fmt.Fprintf(&b, "  period %.2f µs", *iv.SendPeriodUs)
	}
	if iv.Lost != nil {
		fmt.Fprintf(&b, "  lost %.0f", *iv.Lost)
	}
	if iv.Retrans != nil {
		fmt.Fprintf(&b, "  retrans %.0f", *iv.Retrans)
	}
	return b.String()
}

// summaryLines describes a single transfer in words (client and server text output).
func summaryLines(w io.Writer, prefix string, r *Row) {
	fmt.Fprintf(w, "%s%s %s: %d bytes in %.2f s = %.1f Mbit/s", prefix, r.name(), r.Direction, r.Bytes, r.Seconds, r.GoodputMbps)
	if r.RetransPct != nil {
		fmt.Fprintf(w, ", retransmitted %.3f %%", *r.RetransPct)
	}
	if r.RTTms != nil {
		fmt.Fprintf(w, ", rtt %.3f ms", *r.RTTms)
	}
	fmt.Fprintln(w)
	verdict := "match"
	if !r.SHA256OK {
		verdict = "MISMATCH"
	}
	fmt.Fprintf(w, "%ssha256 sender %s receiver %s: %s\n", prefix, r.SenderSHA256, r.ReceiverSHA256, verdict)
}
