//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Host names one of the three namespaces.
type Host int

const (
	HostA  Host = iota // the client side, 198.18.1.2
	Router             // the WAN router, 198.18.1.1 and 198.18.2.1
	HostB              // the server side, 198.18.2.2
)

func (h Host) String() string { return [...]string{"A", "R", "B"}[h] }

// Addresses (RFC 2544 benchmarking range 198.18.0.0/15 only). Each run has its
// own namespaces, so parallel runs may reuse them.
var (
	addrA  = netip.MustParseAddr("198.18.1.2")
	addrRA = netip.MustParseAddr("198.18.1.1")
	addrRB = netip.MustParseAddr("198.18.2.1")
	addrB  = netip.MustParseAddr("198.18.2.2")
)

// Interface names inside the namespaces.
const (
	ifA     = "a0"   // in A, toward R
	ifRA    = "ra"   // in R, toward A (shaped)
	ifRB    = "rb"   // in R, toward B (shaped)
	ifB     = "b0"   // in B, toward R
	ifDelay = "dly0" // the delay line's TUN device in R
	// delayTable is the routing table that sends everything arriving from
	// the veths into the delay line.
	delayTable = "100"
	nftTable   = "udttb"
	// tunQueueLen is the TUN device's queue, packets.
	tunQueueLen = 20000
)

// Testbed is a running emulated path A ⇄ R ⇄ B. Close removes everything.
type Testbed struct {
	Config
	// Stale lists namespaces of killed earlier runs that New removed.
	Stale []string
	ns    [3]string
	delay *delayProc

	// ctx is cancelled, with a *DeadError as its cause, when the delay line or a namespace
	// dies (watch); stopWatch and watchDone end the watcher.
	ctx       context.Context
	cancel    context.CancelCauseFunc
	stopWatch chan struct{}
	watchDone chan struct{}

	mu   sync.Mutex
	pids []int // process groups started through Start
	// undo holds cleanup steps, run in reverse order by Close.
	undo      []func() error
	closeOnce sync.Once
	closeErr  error
}

// RequiredTools are the programs the testbed needs, with the Debian package
// that provides each.
var RequiredTools = []struct{ Bin, Pkg string }{
	{"ip", "iproute2"}, {"tc", "iproute2"}, {"nft", "nftables"}, {"ping", "iputils-ping"},
}

// MissingTools returns a one-line hint naming what to install, or "".
func MissingTools() string {
	var pkgs []string
	seen := map[string]bool{}
	for _, t := range RequiredTools {
		if _, err := exec.LookPath(t.Bin); err != nil && !seen[t.Pkg] {
			seen[t.Pkg] = true
			pkgs = append(pkgs, t.Pkg)
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	return fmt.Sprintf("missing tools: install them with `apt-get install %s`", strings.Join(pkgs, " "))
}

// CheckPrivileges returns an error unless the process can create namespaces.
func CheckPrivileges() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (it creates network namespaces, veths, qdiscs, nftables rules and a TUN device): run it with sudo")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return errors.New("needs /dev/net/tun (modprobe tun)")
	}
	return MissingToolsErr()
}

// MissingToolsErr is MissingTools as an error.
func MissingToolsErr() error {
	if m := MissingTools(); m != "" {
		return errors.New(m)
	}
	return nil
}

// New builds the three namespaces, links, shaping, loss and the delay line.
// On error everything created so far is removed.
func New(ctx context.Context, cfg Config) (_ *Testbed, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tb := &Testbed{Config: cfg, Stale: cleanStale(ctx)}
	tb.ctx, tb.cancel = context.WithCancelCause(ctx)
	pid := strconv.Itoa(os.Getpid())
	// A per-process counter keeps several testbeds of one process apart.
	seq := strconv.FormatUint(uint64(tbSeq.Add(1)), 10)
	for h, s := range []string{"a", "r", "b"} {
		tb.ns[h] = nsPrefix + pid + "-" + seq + s
	}
	defer func() {
		if err != nil {
			tb.Close()
			tb = nil
		}
	}()
	for _, ns := range tb.ns {
		if _, err := runCmd(ctx, "ip", "netns", "add", ns); err != nil {
			return nil, err
		}
		tb.undo = append(tb.undo, func() error {
			_, err := runCmd(context.Background(), "ip", "netns", "delete", ns)
			return err
		})
	}
	a, r, b := tb.ns[HostA], tb.ns[Router], tb.ns[HostB]
	steps := [][]string{
		{"-n", a, "link", "add", ifA, "type", "veth", "peer", "name", ifRA, "netns", r},
		{"-n", b, "link", "add", ifB, "type", "veth", "peer", "name", ifRB, "netns", r},
		{"-n", a, "addr", "add", addrA.String() + "/24", "dev", ifA},
		{"-n", r, "addr", "add", addrRA.String() + "/24", "dev", ifRA},
		{"-n", r, "addr", "add", addrRB.String() + "/24", "dev", ifRB},
		{"-n", b, "addr", "add", addrB.String() + "/24", "dev", ifB},
	}
	for _, l := range [][2]string{{a, "lo"}, {a, ifA}, {r, "lo"}, {r, ifRA}, {r, ifRB}, {b, "lo"}, {b, ifB}} {
		steps = append(steps, []string{"-n", l[0], "link", "set", l[1], "up"})
	}
	steps = append(steps,
		[]string{"-n", a, "route", "add", "default", "via", addrRA.String()},
		[]string{"-n", b, "route", "add", "default", "via", addrRB.String()},
	)
	for _, s := range steps {
		if _, err := runCmd(ctx, "ip", s...); err != nil {
			return nil, err
		}
	}
	for _, kv := range [][2]string{
		{"net.ipv4.ip_forward", "1"},
		{"net.ipv4.conf.all.rp_filter", "0"},
		{"net.ipv4.conf.default.rp_filter", "0"},
	} {
		if err := writeSysctl(r, kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := tb.startDelayLine(ctx); err != nil {
		return nil, err
	}
	if err := tb.shape(ctx); err != nil {
		return nil, err
	}
	if err := tb.SetLoss(ctx, cfg.Loss); err != nil {
		return nil, err
	}
	tb.stopWatch, tb.watchDone = make(chan struct{}), make(chan struct{})
	go tb.watch()
	return tb, nil
}

// DeadError says that part of the testbed died under a run: the delay line exited or a
// namespace was deleted. Whatever ran meanwhile did not cross the emulated path (without the
// delay line the router forwards at once: a ping reads 0.1 ms), so the run stops.
type DeadError struct{ Err error }

func (e *DeadError) Error() string {
	return e.Err.Error() + "; stopped (measurements past this point would not cross the emulated path)"
}

func (e *DeadError) Unwrap() error { return e.Err }

// nsCheckEvery is how often the watcher checks that the namespaces still exist (one stat each).
const nsCheckEvery = 250 * time.Millisecond

// watch cancels the testbed's context as soon as the delay line exits or a namespace
// disappears, until Close.
func (tb *Testbed) watch() {
	defer close(tb.watchDone)
	t := time.NewTicker(nsCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-tb.stopWatch:
			return
		case <-tb.delay.exited:
			tb.cancel(&DeadError{tb.delay.died()})
			return
		case <-t.C:
			for h, ns := range tb.ns {
				if _, err := os.Stat(filepath.Join(netnsDir, ns)); err != nil {
					tb.cancel(&DeadError{fmt.Errorf("namespace %s (host %v) disappeared", ns, Host(h))})
					return
				}
			}
		}
	}
}

// Context returns a context derived from New's, cancelled with a *DeadError as its cause as
// soon as the delay line or a namespace dies. Run everything on the testbed under it.
func (tb *Testbed) Context() context.Context { return tb.ctx }

// Dead returns the *DeadError if the testbed died, else nil.
func (tb *Testbed) Dead() error {
	var de *DeadError
	if errors.As(context.Cause(tb.ctx), &de) {
		return de
	}
	return nil
}

// explain returns the testbed's death instead of err when the testbed died (err is then
// a consequence: a cancelled command, a failed ping).
func (tb *Testbed) explain(err error) error {
	if de := tb.Dead(); de != nil {
		return de
	}
	return err
}

var tbSeq atomic.Uint32

// startDelayLine creates the TUN device and routes every packet the router
// receives from a veth into it; what the line writes back arrives on the TUN
// device and is routed by the main table to its destination.
func (tb *Testbed) startDelayLine(ctx context.Context) error {
	r := tb.ns[Router]
	dl, err := startDelayProc(ctx, r, ifDelay, tb.RTT/2)
	if err != nil {
		return err
	}
	tb.delay = dl
	tb.undo = append(tb.undo, dl.Close)
	if err := writeSysctl(r, "net/ipv4/conf/"+ifDelay+"/rp_filter", "0"); err != nil {
		return err
	}
	for _, s := range [][]string{
		// A long queue in front of the line: when the VM deschedules the
		// line for a few ms, arriving packets wait instead of being dropped
		// (the default 500 lasts 6 ms at 1 Gbit/s).
		{"-n", r, "link", "set", ifDelay, "txqueuelen", strconv.Itoa(tunQueueLen)},
		{"-n", r, "link", "set", ifDelay, "up"},
		{"-n", r, "route", "add", "default", "dev", ifDelay, "table", delayTable},
		{"-n", r, "rule", "add", "iif", ifRA, "lookup", delayTable, "pref", "100"},
		{"-n", r, "rule", "add", "iif", ifRB, "lookup", delayTable, "pref", "101"},
	} {
		if _, err := runCmd(ctx, "ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// shape puts a tbf on each of the router's veths. The size table's -14 byte
// overhead makes tbf count IP bytes, so Rate is the IP-level rate.
func (tb *Testbed) shape(ctx context.Context) error {
	if tb.Rate == 0 {
		return nil
	}
	for _, dev := range []string{ifRA, ifRB} {
		_, err := runCmd(ctx, "tc", "-n", tb.ns[Router], "qdisc", "replace", "dev", dev, "root",
			"stab", "overhead", "-14",
			"tbf", "rate", strconv.FormatInt(tb.Rate, 10)+"bit",
			"burst", strconv.FormatInt(tb.BurstBytes(), 10),
			"limit", strconv.FormatInt(tb.QueueBytes(), 10))
		if err != nil {
			return err
		}
	}
	return nil
}

// nftRules returns the router's ruleset: a forward-hook chain that counts
// packets leaving the delay line and drops a random LossThreshold/lossScale
// of them (nftables numgen random).
func (c Config) nftRules() string {
	drop := ""
	if k := c.LossThreshold(); k > 0 {
		drop = fmt.Sprintf("\t\tiifname %q numgen random mod %d < %d counter drop\n", ifDelay, lossScale, k)
	}
	return fmt.Sprintf("table inet %s {\n\tchain forward_loss {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tiifname %q counter\n%s\t}\n}\n",
		nftTable, ifDelay, drop)
}

// SetLoss replaces the router's loss rule with pct percent (0–100).
func (tb *Testbed) SetLoss(ctx context.Context, pct float64) error {
	c := tb.Config
	c.Loss = pct
	if err := c.Validate(); err != nil {
		return err
	}
	// One transaction: delete the old table (if any) and add the new one.
	rules := fmt.Sprintf("table inet %s\ndelete table inet %s\n%s", nftTable, nftTable, c.nftRules())
	if _, err := runStdin(ctx, rules, "ip", "netns", "exec", tb.ns[Router], "nft", "-f", "-"); err != nil {
		return err
	}
	tb.Loss = pct
	return nil
}

// NS returns the namespace name of host h (for `ip netns exec`).
func (tb *Testbed) NS(h Host) string { return tb.ns[h] }

// Addr returns host h's address (the router's side toward A for Router).
func (tb *Testbed) Addr(h Host) netip.Addr {
	return [...]netip.Addr{addrA, addrRA, addrB}[h]
}

// DelayStats returns the delay line's counters.
func (tb *Testbed) DelayStats() (DelayLineStats, error) { return tb.delay.Stats() }

// Command returns a command that runs name with args inside host h's
// namespace. Its environment gains TESTBED_A and TESTBED_B (the hosts'
// addresses) and TESTBED_NS_A, TESTBED_NS_R, TESTBED_NS_B (the namespace
// names, e.g. for `ip netns exec $TESTBED_NS_R tc -s qdisc`). It runs in its own process group and gets SIGKILL if the
// testbed process dies; cancelling ctx sends SIGTERM to its group (SIGKILL
// 3 s later). Start it with Testbed.Start so that Close can kill it too.
func (tb *Testbed) Command(ctx context.Context, h Host, name string, args ...string) *exec.Cmd {
	cmd := nsCommand(ctx, tb.ns[h], name, args...)
	cmd.Env = append(os.Environ(), "TESTBED_A="+addrA.String(), "TESTBED_B="+addrB.String(),
		"TESTBED_NS_A="+tb.ns[HostA], "TESTBED_NS_R="+tb.ns[Router], "TESTBED_NS_B="+tb.ns[HostB])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	return cmd
}

// Start starts cmd (from Command) and remembers its process group, which
// Close kills if it is still there.
func (tb *Testbed) Start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	tb.mu.Lock()
	tb.pids = append(tb.pids, cmd.Process.Pid)
	tb.mu.Unlock()
	return nil
}

// Close kills the processes started through Command, stops the delay line
// and deletes the namespaces (with their veths, qdiscs and nftables rules).
// It returns the first error and is idempotent.
func (tb *Testbed) Close() error {
	tb.closeOnce.Do(func() {
		if tb.stopWatch != nil {
			close(tb.stopWatch)
			<-tb.watchDone
		}
		tb.mu.Lock()
		pids := tb.pids
		tb.mu.Unlock()
		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH when already gone
		}
		for i := len(tb.undo) - 1; i >= 0; i-- {
			if err := tb.undo[i](); err != nil && tb.closeErr == nil {
				tb.closeErr = err
			}
		}
		tb.cancel(nil)
	})
	return tb.closeErr
}

// stopProcess waits up to grace for cmd (started with Testbed.Start) to exit
// by itself, then sends SIGTERM to its process group and waits (WaitDelay
// escalates to SIGKILL).
func stopProcess(cmd *exec.Cmd, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Second):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return <-done
}
