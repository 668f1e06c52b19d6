package main

import (
	"cmp"
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
	runs      int // runs per cell; the row is the median by goodput (issue 10: 3)
	protocols string
	udtperf   string
	traceDir  string // one udtperf -trace file per udt cell
	pacer     string // udtperf -pacer for the udt rows ("" = its default)
	tolerance string // udtperf -pacing-tolerance for the udt rows ("" = its default)
}

// Scenario is one point of the matrix: a path setting.
type Scenario struct {
	Rate int64         // bit/s
	RTT  time.Duration // round trip
	Loss float64       // percent
	MTU  int           // the router–B link's MTU, bytes; 0 = 1500 (Config.MTU)
}

func (s Scenario) String() string {
	mtu := ""
	if s.MTU > 0 {
		mtu = fmt.Sprintf(" · MTU %d", s.MTU)
	}
	return fmt.Sprintf("%g Mbit/s · %v · %g %%%s", float64(s.Rate)/1e6, s.RTT, s.Loss, mtu)
}

// Protocol names in the matrix (Row.Protocol).
const (
	protoUDT       = "udt"        // udtperf -proto udt: the default controller (bbr)
	protoUDTNative = "udt-native" // udtperf -proto udt -cc udt: UDT 4.11's native DAIMD
	protoTCPCubic  = "tcp-cubic"
	protoTCPBBR    = "tcp-bbr"
	protoQUIC      = "quic"
)

// allProtocols is the matrix's protocol axis in table order.
var allProtocols = []string{protoUDT, protoUDTNative, protoTCPCubic, protoTCPBBR, protoQUIC}

// udtCC maps the matrix's udt variants to udtperf's -cc value ("" = udtperf's default).
var udtCC = map[string]string{protoUDT: "", protoUDTNative: "udt"}

// removedProtocols are protocols the matrix no longer runs, with the reason -protocols gives.
var removedProtocols = map[string]string{
	"udt-lt": "was removed: BBR, the default udt controller (protocol udt), beat it on every path measured; use udt, or udt-native for UDT 4.11's DAIMD",
}

// scenarios returns the matrix: rate 100 Mbit/s × RTT 0, 20, 100 ms × loss
// 0, 0.1, 1 %, then 100 Mbit/s · 20 ms · 0 % at a path MTU of 1400 and of 1280
// (path MTU discovery: compare with the 1500 row of the same setting); quick:
// 100 Mbit/s · 100 ms · 0 and 1 %.
func scenarios(quick bool) []Scenario {
	if quick {
		return []Scenario{{Rate: 100e6, RTT: 100 * time.Millisecond}, {Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 1}}
	}
	var out []Scenario
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond} {
		for _, loss := range []float64{0, 0.1, 1} {
			out = append(out, Scenario{Rate: 100e6, RTT: rtt, Loss: loss})
		}
	}
	for _, mtu := range []int{1400, 1280} {
		out = append(out, Scenario{Rate: 100e6, RTT: 20 * time.Millisecond, MTU: mtu})
	}
	return out
}

// headScenario is the scenario the link is measured at first: the last of the MTU-1500 rows.
func headScenario(scs []Scenario) Scenario {
	for i := len(scs) - 1; i >= 0; i-- {
		if scs[i].MTU == 0 {
			return scs[i]
		}
	}
	return scs[len(scs)-1]
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
		if why, ok := removedProtocols[p]; ok {
			return nil, fmt.Errorf("protocol %q %s", p, why)
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
	Protocol    string  `json:"protocol"`      // udt, udt-native, tcp-cubic, tcp-bbr, quic
	RateMbps    float64 `json:"rate_mbps"`     // set bottleneck rate, Mbit/s (IP bytes)
	RTTms       float64 `json:"rtt_ms"`        // set round-trip delay, ms
	LossPct     float64 `json:"loss_pct"`      // set loss per direction, %
	MTU         int     `json:"mtu"`           // the router–B link's MTU, bytes (1500 unless set)
	GoodputMbps float64 `json:"goodput_mbps"`  // payload delivered to B, Mbit/s, whole transfer
	RetransPct  float64 `json:"retrans_pct"`   // retransmitted / sent, % (sender's count)
	SHA256OK    bool    `json:"sha256_ok"`     // B's SHA-256 of the stream equals A's
	Seconds     float64 `json:"seconds"`       // transfer duration, s
	LinkRTTms   float64 `json:"link_rtt_ms"`   // ping median measured before the scenario, ms
	LinkLossPct float64 `json:"link_loss_pct"` // UDP probe loss measured before the scenario, %
	Error       string  `json:"error,omitempty"`
	// RunsMbps is every run's goodput, in the order run; the row's other figures are the
	// median run's (the runs of a scenario interleave the protocols: A B C, A B C, …).
	RunsMbps []float64 `json:"runs_mbps"`

	Backend string `json:"backend"` // udt: the sender's pacer backend (udtperf's); "" otherwise
	// SenderCPU is the sender's process CPU seconds per 10⁹ payload bytes (udtperf's
	// sender_cpu_s_per_gb, SHA-256 included); null where not measured (the built-in TCP).
	SenderCPU *float64 `json:"sender_cpu_s_per_gb"`
}

func newRow(proto string, s Scenario) Row {
	mtu := s.MTU
	if mtu == 0 {
		mtu = 1500
	}
	return Row{Protocol: proto, RateMbps: float64(s.Rate) / 1e6, RTTms: float64(s.RTT) / 1e6, LossPct: s.Loss, MTU: mtu}
}

// printTable writes the matrix as a Markdown table (one line per row).
func printTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| protocol | rate Mbit/s | RTT ms | loss % | MTU | goodput Mbit/s | runs Mbit/s | retrans % | sha256 | link RTT ms | link loss % | snd CPU s/GB |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|")
	for _, r := range rows {
		gp, rt, sha := fmt.Sprintf("%.2f", r.GoodputMbps), fmt.Sprintf("%.2f", r.RetransPct), "ok"
		proto, cpu := r.Protocol, "n/a"
		if r.Backend != "" {
			proto += "/" + r.Backend
		}
		if r.SenderCPU != nil {
			cpu = fmt.Sprintf("%.2f", *r.SenderCPU)
		}
		if !r.SHA256OK {
			sha = "MISMATCH"
		}
		if r.Error != "" {
			gp, rt, sha = "—", "—", "error: "+r.Error
		}
		var runs []string
		for _, g := range r.RunsMbps {
			runs = append(runs, fmt.Sprintf("%.1f", g))
		}
		fmt.Fprintf(w, "| %s | %g | %g | %g | %d | %s | %s | %s | %s | %.2f | %.3f | %s |\n",
			proto, r.RateMbps, r.RTTms, r.LossPct, r.MTU, gp, strings.Join(runs, " "), rt, sha, r.LinkRTTms, r.LinkLossPct, cpu)
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

// medianRow returns the run with the median goodput (the lower middle of an even count), with
// every run's goodput in RunsMbps, SHA256OK only if every run verified, and the first error.
func medianRow(runs []Row) Row {
	if len(runs) == 0 {
		return Row{}
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b Row) int { return cmp.Compare(a.GoodputMbps, b.GoodputMbps) })
	m := sorted[(len(sorted)-1)/2]
	m.RunsMbps = nil
	for _, r := range runs {
		m.RunsMbps = append(m.RunsMbps, r.GoodputMbps)
		m.SHA256OK = m.SHA256OK && r.SHA256OK
		if m.Error == "" && r.Error != "" {
			m.Error = r.Error
		}
	}
	return m
}
