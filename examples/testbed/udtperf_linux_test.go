//go:build linux

package main

import (
	"testing"
	"time"
)

func TestParseUdtperfJSON(t *testing.T) {
	one := `{"protocol":"udt","backend":"hybrid","goodput_mbps":95.5,"retrans_pct":1.2,"rtt_ms":100.3,"sha256_ok":true,"seconds":10,"sender_cpu_s_per_gb":2.5}`
	r, err := parseUdtperfJSON([]byte(one), "udt")
	if err != nil || r.GoodputMbps != 95.5 || r.RetransPct != 1.2 || !r.SHA256OK || r.Seconds != 10 ||
		r.Backend != "hybrid" || r.SenderCPU == nil || *r.SenderCPU != 2.5 {
		t.Errorf("single object: %+v, %v", r, err)
	}
	many := `{"results":[{"protocol":"udt","goodput_mbps":90,"sha256_ok":true},{"protocol":"quic","goodput_mbps":40,"retrans_pct":2,"sha256_ok":false}]}`
	r, err = parseUdtperfJSON([]byte(many), "quic")
	if err != nil || r.GoodputMbps != 40 || r.SHA256OK {
		t.Errorf("results, quic row: %+v, %v", r, err)
	}
	for _, bad := range []string{"", "not json", `{"protocol":"udt"}`, `{"results":[]}`} {
		if _, err := parseUdtperfJSON([]byte(bad), "udt"); err == nil {
			t.Errorf("parseUdtperfJSON(%q): want an error", bad)
		}
	}
}

func TestTraceFileNames(t *testing.T) {
	got := traceFile("/d", "udt-native", Config{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 0.1})
	if got != "/d/udt-native-100mbit-100ms-0.1pct.jsonl" {
		t.Errorf("trace file %q", got)
	}
}
