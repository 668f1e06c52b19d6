package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// matrixOptions are the -matrix flags.
type matrixOptions struct {
	run       bool
	quick     bool
	json      bool
	plot      string
	duration  time.Duration
	protocols string
	udtperf   string
}

// Scenario is one point of the matrix: a path setting.
type Scenario struct {
	Rate int64         // bit/s
	RTT  time.Duration // round trip
	Loss float64       // percent
}

func (s Scenario) String() string {
	return fmt.Sprintf("%g Mbit/s · %v · %g %%", float64(s.Rate)/1e6, s.RTT, s.Loss)
}

// Protocol names in the matrix (Row.Protocol).
const (
	protoUDT       = "udt"        // udtperf -proto udt: the default controller (bbr)
	protoUDTNative = "udt-native" // udtperf -proto udt -cc udt: UDT 4.11's native DAIMD
	protoUDTLT     = "udt-lt"     // udtperf -proto udt -cc udt-lt: the loss-tolerant DAIMD
	protoTCPCubic  = "tcp-cubic"
	protoTCPBBR    = "tcp-bbr"
	protoQUIC      = "quic"
)

// allProtocols is the matrix's protocol axis in table order.
var allProtocols = []string{protoUDT, protoUDTNative, protoUDTLT, protoTCPCubic, protoTCPBBR, protoQUIC}

// udtCC maps the matrix's udt variants to udtperf's -cc value ("" = udtperf's default).
var udtCC = map[string]string{protoUDT: "", protoUDTNative: "udt", protoUDTLT: "udt-lt"}

// scenarios returns the matrix: rate 100 Mbit/s × RTT 0, 20, 100 ms × loss
// 0, 0.1, 1 %; quick: 100 Mbit/s · 100 ms · 0 and 1 %.
func scenarios(quick bool) []Scenario {
	if quick {
		return []Scenario{{100e6, 100 * time.Millisecond, 0}, {100e6, 100 * time.Millisecond, 1}}
	}
	var out []Scenario
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond} {
		for _, loss := range []float64{0, 0.1, 1} {
			out = append(out, Scenario{100e6, rtt, loss})
		}
	}
	return out
}

// selectProtocols parses -protocols (comma-separated; empty = the default
// set: all of them, or udt, tcp-bbr and tcp-cubic with -quick).
func selectProtocols(list string, quick bool) ([]string, error) {
	if list == "" {
		if quick {
			return []string{protoUDT, protoTCPBBR, protoTCPCubic}, nil
		}
		return slices.Clone(allProtocols), nil
	}
	alias := map[string]string{"cubic": protoTCPCubic, "bbr": protoTCPBBR, "tcp": protoTCPCubic}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(strings.ToLower(p))
		if a, ok := alias[p]; ok {
			p = a
		}
		if !slices.Contains(allProtocols, p) {
			return nil, fmt.Errorf("unknown protocol %q (want %s)", p, strings.Join(allProtocols, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Row is one transfer of the matrix; the JSON names are stable.
type Row struct {
	Protocol    string  `json:"protocol"`      // udt, udt-native, udt-lt, tcp-cubic, tcp-bbr, quic
	RateMbps    float64 `json:"rate_mbps"`     // set bottleneck rate, Mbit/s (IP bytes)
	RTTms       float64 `json:"rtt_ms"`        // set round-trip delay, ms
	LossPct     float64 `json:"loss_pct"`      // set loss per direction, %
	GoodputMbps float64 `json:"goodput_mbps"`  // payload delivered to B, Mbit/s, whole transfer
	RetransPct  float64 `json:"retrans_pct"`   // retransmitted / sent, % (sender's count)
	SHA256OK    bool    `json:"sha256_ok"`     // B's SHA-256 of the stream equals A's
	Seconds     float64 `json:"seconds"`       // transfer duration, s
	LinkRTTms   float64 `json:"link_rtt_ms"`   // ping median measured before the scenario, ms
	LinkLossPct float64 `json:"link_loss_pct"` // UDP probe loss measured before the scenario, %
	Error       string  `json:"error,omitempty"`
}

func newRow(proto string, s Scenario) Row {
	return Row{Protocol: proto, RateMbps: float64(s.Rate) / 1e6, RTTms: float64(s.RTT) / 1e6, LossPct: s.Loss}
}

// printTable writes the matrix as a Markdown table (one line per row).
func printTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| protocol | rate Mbit/s | RTT ms | loss % | goodput Mbit/s | retrans % | sha256 | link RTT ms | link loss % |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---:|---:|")
	for _, r := range rows {
		gp, rt, sha := fmt.Sprintf("%.2f", r.GoodputMbps), fmt.Sprintf("%.2f", r.RetransPct), "ok"
		if !r.SHA256OK {
			sha = "MISMATCH"
		}
		if r.Error != "" {
			gp, rt, sha = "—", "—", "error: "+r.Error
		}
		fmt.Fprintf(w, "| %s | %g | %g | %g | %s | %s | %s | %.2f | %.3f |\n",
			r.Protocol, r.RateMbps, r.RTTms, r.LossPct, gp, rt, sha, r.LinkRTTms, r.LinkLossPct)
	}
}

// writeJSON writes {"results": rows}.
func writeJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Results []Row `json:"results"`
	}{rows})
}
