//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain also serves the delay line's hidden subcommand: the testbed
// re-executes its own binary (here the test binary) inside the router
// namespace.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == delayLineCmd {
		os.Exit(delayLineMain(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// TestSmoke builds one short scenario (100 Mbit/s, 20 ms, 1 % loss) and
// checks that the link measures right: ping RTT within 5 %, UDP loss within
// ±30 % and in order, TCP goodput at 0 % loss near the rate, and that
// everything is removed afterwards. Root only; 12–25 s.
//
// The TCP rate is the one quantity a loaded machine moves: the endpoints
// are ordinary processes, and with a dozen foreign jobs on 2 vCPUs they lose
// whole scheduler slices. The test therefore fails on the ±5 % tolerance only
// if both attempts miss it by far (below 70 % of the rate: the shaping or the
// delay line is broken) and logs the verdict otherwise; and when the delay line
// itself records a stall (StallNote: over 0.1 % of packets held 10 ms past
// their time, as when `go test ./...` runs the simulations beside it), a low
// rate is reported as a skip, since it then measures the host, not the path.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("smoke test builds namespaces; skipped with -short")
	}
	if err := CheckPrivileges(); err != nil {
		t.Skip("skipping the namespace smoke test:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	cfg := Config{Rate: 100e6, RTT: 20 * time.Millisecond, Loss: 1}
	var checks []Check
	for attempt := 1; attempt <= 2; attempt++ {
		tb, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{tb.NS(HostA), tb.NS(Router), tb.NS(HostB)}
		checks, err = SelfMeasure(ctx, tb, "quick", "builtin", testWriter{t})
		st, serr := tb.DelayStats()
		rt, rterr := realtimeThreads(tb.delay.cmd.Process.Pid)
		if cerr := tb.Close(); cerr != nil {
			t.Errorf("Close: %v", cerr)
		}
		for _, n := range names {
			if _, statErr := os.Stat(netnsDir + "/" + n); statErr == nil {
				t.Errorf("namespace %s still exists after Close", n)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rterr != nil:
			t.Errorf("reading the delay line's threads: %v", rterr)
		case len(rt) > 0:
			t.Errorf("delay line threads %v run under a real-time policy: a real-time Go thread can livelock the line (see DelayLine)", rt)
		}
		var sb strings.Builder
		ok := printChecks(&sb, checks)
		t.Logf("attempt %d:\n%s", attempt, sb.String())
		stall := ""
		if serr == nil {
			t.Logf("delay line: %d forwarded, nice −20 %v, lateness %s", st.Forwarded, st.HighPriority, st.LateSummary())
			if !st.HighPriority {
				// Root without CAP_SYS_NICE (a container) cannot lower a nice value; the line
				// still works, only less sheltered from load. The policy check above is the guard.
				t.Log("the delay line's thread runs without nice −20 (no CAP_SYS_NICE?)")
			}
			if st.Forwarded == 0 {
				t.Error("delay line forwarded nothing: traffic bypassed it")
			}
			stall = st.StallNote()
		}
		if ok {
			return
		}
		if attempt == 2 && onlyRateLow(checks, 0.70*float64(cfg.Rate)/1e6) {
			t.Logf("TCP rate outside ±5 %% twice but above 70 %%: machine loaded? (see the table)")
			return
		}
		if attempt == 2 && stall != "" && onlyRateLow(checks, 0) {
			// The delay line's own record says it missed its schedule: TCP's ACK clock
			// stalled with it, so the rate measured the host's scheduling, not the shaping.
			t.Skipf("TCP rate check inconclusive: %s (other jobs on this machine; run the test alone)", stall)
		}
		// One retry: on a shared 2-vCPU machine a burst of foreign load can
		// starve the endpoints for a second.
	}
	for _, c := range checks {
		if !c.Skipped && !c.OK {
			t.Errorf("%s: set %s, measured %s, tolerance %s", c.Name, c.Set, c.Measured, c.Tolerance)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// onlyRateLow reports whether every failed check is the TCP rate and it is
// still at least floor Mbit/s.
func onlyRateLow(checks []Check, floor float64) bool {
	for _, c := range checks {
		if c.Skipped || c.OK {
			continue
		}
		var mbps float64
		if !strings.HasPrefix(c.Name, "TCP rate") {
			return false
		}
		if _, err := fmt.Sscanf(c.Measured, "%f Mbit/s", &mbps); err != nil || mbps < floor {
			return false
		}
	}
	return true
}

// TestSmokeUDT moves data with udtperf (examples/udtperf, built here) over
// udt from A to B across 100 Mbit/s · 20 ms · 1 % loss and checks that it
// completes byte-exact (both ends' SHA-256 agree). Root only; the goodput is
// logged, not asserted.
func TestSmokeUDT(t *testing.T) {
	if testing.Short() {
		t.Skip("smoke test builds namespaces; skipped with -short")
	}
	if err := CheckPrivileges(); err != nil {
		t.Skip("skipping the namespace smoke test:", err)
	}
	if _, err := os.Stat("../udtperf"); err != nil {
		t.Skip("examples/udtperf does not exist yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin, err := buildUdtperf(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tb, err := New(ctx, Config{Rate: 100e6, RTT: 20 * time.Millisecond, Loss: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	row, err := udtperfRunner{bin: bin, proto: protoUDT, pacer: "nanosleep"}.Run(ctx, tb, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("udt over 100 Mbit/s · 20 ms · 1 %%: %.2f Mbit/s, retransmitted %.2f %%, %.1f s", row.GoodputMbps, row.RetransPct, row.Seconds)
	if row.Backend != "nanosleep" || row.SenderCPU == nil || *row.SenderCPU <= 0 {
		t.Errorf("row does not carry the sender's backend and CPU: backend %q, CPU %v", row.Backend, row.SenderCPU)
	}
	if !row.SHA256OK {
		t.Error("udt transfer was not byte-exact: SHA-256 mismatch")
	}
	if row.GoodputMbps <= 0 {
		t.Error("udt transfer moved nothing")
	}
}

// realtimeThreads returns the IDs of process pid's threads that run under a real-time policy
// (SCHED_FIFO or SCHED_RR: field 41 of /proc/PID/task/TID/stat, proc(5)).
func realtimeThreads(pid int) ([]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var rt []string
	for _, e := range tids {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		// Fields after the command name, which is in parentheses and may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 39 {
			return nil, fmt.Errorf("%s/stat: %d fields after the name", e.Name(), len(f))
		}
		if pol := f[38]; pol == "1" || pol == "2" {
			rt = append(rt, e.Name())
		}
	}
	return rt, nil
}
