package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScenarios(t *testing.T) {
	full := scenarios(false)
	if len(full) != 11 {
		t.Fatalf("full matrix has %d scenarios, want 3 RTTs × 3 losses and 2 MTUs", len(full))
	}
	seen := map[Scenario]bool{}
	for _, s := range full {
		if s.Rate != 100e6 || seen[s] {
			t.Errorf("bad or duplicate scenario %v", s)
		}
		seen[s] = true
	}
	for _, want := range []Scenario{{100e6, 0, 0, 0}, {100e6, 20 * time.Millisecond, 0.1, 0}, {100e6, 100 * time.Millisecond, 1, 0},
		{100e6, 20 * time.Millisecond, 0, 1400}, {100e6, 20 * time.Millisecond, 0, 1280}} {
		if !seen[want] {
			t.Errorf("missing %v", want)
		}
	}
	if q := scenarios(true); len(q) != 2 || q[0].RTT != 100*time.Millisecond || q[0].Loss != 0 || q[1].Loss != 1 {
		t.Errorf("quick = %v", q)
	}
	if h := headScenario(full); h.MTU != 0 || h.RTT != 100*time.Millisecond || h.Loss != 1 {
		t.Errorf("head scenario %v, want the last MTU-1500 one", h)
	}
}

func TestSelectProtocols(t *testing.T) {
	if p, _ := selectProtocols("", false); strings.Join(p, ",") != "udt,udt-native,tcp-cubic,tcp-bbr,quic" {
		t.Errorf("default = %v", p)
	}
	if p, _ := selectProtocols("", true); strings.Join(p, ",") != "udt,tcp-bbr,tcp-cubic" {
		t.Errorf("quick = %v", p)
	}
	if p, err := selectProtocols("cubic, BBR,cubic", false); err != nil || strings.Join(p, ",") != "tcp-cubic,tcp-bbr" {
		t.Errorf("aliases = %v, %v", p, err)
	}
	if _, err := selectProtocols("sctp", false); err == nil {
		t.Error("unknown protocol accepted")
	}
	// udt-lt was removed: asking for it says so and points at the default.
	for _, list := range []string{"udt-lt", "udt,UDT-LT"} {
		_, err := selectProtocols(list, false)
		if err == nil || !strings.Contains(err.Error(), "udt-lt") || !strings.Contains(err.Error(), "removed") || !strings.Contains(err.Error(), "default") {
			t.Errorf("selectProtocols(%q): %v, want an error saying udt-lt was removed", list, err)
		}
	}
}

func sampleRows() []Row {
	a := newRow(protoTCPCubic, Scenario{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 1})
	a.GoodputMbps, a.RetransPct, a.SHA256OK = 1.3, 1.45, true
	b := newRow(protoUDT, Scenario{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 1})
	b.Error = "udtperf missing"
	return []Row{a, b}
}

func TestWriteJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, sampleRows()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 2 {
		t.Fatalf("%d results", len(doc.Results))
	}
	for _, k := range []string{"protocol", "rate_mbps", "rtt_ms", "loss_pct", "mtu", "goodput_mbps", "retrans_pct", "sha256_ok"} {
		if _, ok := doc.Results[0][k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	if doc.Results[0]["rtt_ms"] != 100.0 || doc.Results[0]["rate_mbps"] != 100.0 || doc.Results[1]["error"] != "udtperf missing" {
		t.Errorf("rows = %v", doc.Results)
	}
	buf.Reset()
	writeJSON(&buf, nil)
	if !strings.Contains(buf.String(), `"results": []`) {
		t.Errorf("empty matrix JSON = %s", buf.String())
	}
}

func TestPrintTable(t *testing.T) {
	var buf bytes.Buffer
	c := newRow(protoUDT, Scenario{Rate: 100e6, RTT: 20 * time.Millisecond})
	cpu := 3.25
	c.GoodputMbps, c.RetransPct, c.SHA256OK, c.Backend, c.SenderCPU = 90, 0.1, true, "nanosleep", &cpu
	printTable(&buf, append(sampleRows(), c))
	out := buf.String()
	for _, want := range []string{"| tcp-cubic | 100 | 100 | 1 | 1500 | 1.30 |  | 1.45 | ok |", "| udt | 100 | 100 | 1 | 1500 | — |  | — | error: udtperf missing |",
		"| udt/nanosleep | 100 | 20 | 0 | 1500 | 90.00 |  | 0.10 | ok | 0.00 | 0.000 | 3.25 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWritePlot(t *testing.T) {
	f := filepath.Join(t.TempDir(), "m.png")
	if err := writePlot(f, sampleRows()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("not a PNG (%v)", err)
	}
	if writePlot(f, nil) == nil {
		t.Error("plot of nothing: want an error")
	}
}

// The median run is the row; every run's goodput stays in RunsMbps, in order; one failed run
// marks the row.
func TestMedianRow(t *testing.T) {
	sc := Scenario{100e6, 100 * time.Millisecond, 1, 0}
	mk := func(g float64, ok bool) Row { r := newRow(protoUDT, sc); r.GoodputMbps, r.SHA256OK = g, ok; return r }
	m := medianRow([]Row{mk(80, true), mk(60, true), mk(90, true)})
	if m.GoodputMbps != 80 || !m.SHA256OK || len(m.RunsMbps) != 3 || m.RunsMbps[1] != 60 {
		t.Fatalf("median of 80, 60, 90: %+v", m)
	}
	if m := medianRow([]Row{mk(80, true), mk(60, false), mk(90, true)}); m.SHA256OK {
		t.Fatalf("a failed run: %+v", m)
	}
}
