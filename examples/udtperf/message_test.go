package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Self mode with -message adds a message-mode row per udt backend: every message delivered
// intact, shares that add up, and its goodput compared with the stream row.
func TestSelfMessages(t *testing.T) {
	code, out, errOut := runCmd("-proto", "udt", "-pacer", "gotimer", "-bytes", "4MiB", "-message", "64KiB", "-json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var doc struct {
		Results  []map[string]any `json:"results"`
		Messages []MessageRow     `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Results) != 1 || len(doc.Messages) != 1 {
		t.Fatalf("%d stream rows, %d message rows", len(doc.Results), len(doc.Messages))
	}
	m := doc.Messages[0]
	if !m.Intact || m.Error != nil || m.Size != 64<<10 || m.Sent != 64 || m.Delivered != 64 ||
		m.DeliveredPct != 100 || m.DroppedPct != 0 || m.GoodputMbps <= 0 || m.MsgsPerSec <= 0 || m.StreamPct == nil {
		t.Fatalf("message row %+v", m)
	}

	code, out, errOut = runCmd("-proto", "udt", "-pacer", "gotimer", "-bytes", "1MiB", "-message", "8KiB", "-ttl", "1s", "-no-progress")
	if code != 0 || !strings.Contains(out, "msg/gotimer") || !strings.Contains(out, " 1000 ") {
		t.Fatalf("text table: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestMessageFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-ttl", "1s"},
		{"-message", "10"},
		{"-message", "1KiB", "-ttl", "-1s"},
		{"client", "-connect", "127.0.0.1:1", "-message", "1KiB", "-reverse"},
		{"client", "-connect", "127.0.0.1:1", "-message", "1KiB", "-proto", "tcp"},
	} {
		if code, _, _ := runCmd(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
