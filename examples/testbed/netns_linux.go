//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// nsPrefix starts the name of every namespace the testbed creates:
// udttb-<pid>-a, udttb-<pid>-r, udttb-<pid>-b. The PID keeps parallel runs
// apart and lets a later run remove what an aborted one left behind.
const nsPrefix = "udttb-"

// netnsDir is where `ip netns` keeps the bind mounts of named namespaces.
const netnsDir = "/var/run/netns"

// inNS runs f on an OS thread that has joined the named network namespace.
// Sockets and TUN devices created by f belong to that namespace for their
// whole life, whichever thread later uses them. The thread returns to its
// original namespace afterwards; if it cannot, it is left locked so the Go
// runtime discards it.
func inNS(name string, f func() error) error {
	target, err := unix.Open(filepath.Join(netnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", name, err)
	}
	defer unix.Close(target)

	errc := make(chan error, 1)
	// A fresh goroutine: its thread is discarded if restoring fails, and the
	// caller's thread is never touched.
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stay locked: the runtime kills this thread when the goroutine ends.
			errc <- fmt.Errorf("restore netns after %s: %w", name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// nsCommand returns a command that runs name with args inside namespace ns
// (via `ip netns exec`, which also gives it a matching /sys).
func nsCommand(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// runCmd runs a command and returns its stdout; on failure the error carries the
// command line and its stderr.
func runCmd(ctx context.Context, name string, args ...string) (string, error) {
	return runStdin(ctx, "", name, args...)
}

func runStdin(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// writeSysctl sets a sysctl (path below /proc/sys, dotted or slashed) inside
// namespace ns without needing the sysctl binary.
func writeSysctl(ns, key, value string) error {
	p := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	return inNS(ns, func() error {
		if err := os.WriteFile(p, []byte(value), 0); err != nil {
			return fmt.Errorf("sysctl %s=%s in %s: %w", key, value, ns, err)
		}
		return nil
	})
}

// cleanStale deletes namespaces with our prefix whose owning process is gone:
// leftovers of runs that were killed with SIGKILL. It returns the names
// removed.
func cleanStale(ctx context.Context) []string {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
			continue // still running
		}
		if _, err := runCmd(ctx, "ip", "netns", "delete", name); err == nil {
			removed = append(removed, name)
		}
	}
	return removed
}
