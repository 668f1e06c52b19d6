package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestTCPTimedLongerThanIdle: a timed TCP transfer longer than -idle-timeout completes. The
// sender hears nothing from the receiver until the end (TCP's ACKs are the kernel's), so an
// idle deadline on its reads is wrong; before the fix, every `client -proto tcp` run with the
// default -time 10s failed after 10 s with "nothing heard for 10s".
func TestTCPTimedLongerThanIdle(t *testing.T) {
	addr, done, _, srvErr := startServer(t, "-proto", "tcp", "-once", "-idle-timeout", "1s")
	code, out, errOut := runCmd("client", "-connect", addr, "-proto", "tcp", "-time", "2500ms",
		"-idle-timeout", "1s", "-interval", "0", "-json")
	if code != 0 {
		t.Fatalf("client exit %d: %s", code, errOut)
	}
	if c := waitExit(t, done, srvErr); c != 0 {
		t.Errorf("server exit %d: %s", c, srvErr.String())
	}
	var doc struct{ Results []Row }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 || !doc.Results[0].SHA256OK {
		t.Fatalf("client JSON %v: %s", err, out)
	}
	if s := doc.Results[0].Seconds; s < 2 {
		t.Errorf("transfer took %.2f s, want about 2.5", s)
	}
}

// TestTCPCongestionControl: -tcp-cc chooses the tcp sender's kernel congestion control, and
// every tcp row reports the one the sender's socket used (the host's default without -tcp-cc).
func TestTCPCongestionControl(t *testing.T) {
	if err := checkTCPCongestion("reno"); err != nil {
		t.Skip("no TCP congestion control choice here:", err)
	}
	def := defaultTCPCongestion(t)
	addr, done, srvOut, srvErr := startServer(t, "-proto", "tcp", "-json", "-tcp-cc", "reno")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tcp-cc", "reno"}, "reno"},
		{nil, def},
		{[]string{"-reverse"}, "reno"}, // the server sends: its -tcp-cc
	} {
		args := append([]string{"client", "-connect", addr, "-proto", "tcp", "-bytes", "1MiB", "-json"}, tc.args...)
		code, out, errOut := runCmd(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		var doc struct{ Results []Row }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("%v: JSON %v: %s", tc.args, err, out)
		}
		if cc := doc.Results[0].CC; cc == nil || *cc != tc.want {
			t.Errorf("%v: row cc %v, want %q", tc.args, cc, tc.want)
		}
		if n := doc.Results[0].name(); n != "tcp/"+tc.want {
			t.Errorf("%v: row name %q", tc.args, n)
		}
	}
	self, _ := os.FindProcess(os.Getpid())
	self.Signal(os.Interrupt)
	waitExit(t, done, srvErr)
	if !strings.Contains(srvOut.String(), `"cc":"reno"`) {
		t.Errorf("server rows do not name the congestion control: %s", srvOut.String())
	}
	code, _, errOut := runCmd("client", "-connect", addr, "-proto", "tcp", "-tcp-cc", "no-such-cc")
	if code != 2 {
		t.Errorf("-tcp-cc no-such-cc: exit %d", code)
	}
	oneLine(t, errOut, "bad -tcp-cc")
}
