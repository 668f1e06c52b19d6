//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// run builds the testbed, measures it and runs the commands or the matrix.
// It returns the exit code (the client's, when a client ran).
func run(o *options) (code int, err error) {
	if err := CheckPrivileges(); err != nil {
		return 1, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if o.matrix.run {
		return runMatrix(ctx, o)
	}
	tb, err := New(ctx, o.cfg)
	if err != nil {
		return 1, err
	}
	defer func() {
		if cerr := tb.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cleanup: %w", cerr)
		}
	}()
	ctx = tb.Context() // cancelled as soon as the delay line or a namespace dies
	// stdout carries results only: the self-measurement when that is all the run does, else
	// the commands' own output. The banner and every log line go to stderr.
	log := o.stderr
	if len(tb.Stale) > 0 {
		fmt.Fprintf(log, "testbed: removed namespaces left by killed runs: %s\n", strings.Join(tb.Stale, " "))
	}
	queue := ""
	if tb.Rate > 0 {
		queue = fmt.Sprintf(", queue %d B", tb.QueueBytes())
	}
	fmt.Fprintf(log, "testbed: %s%s (namespaces %s, %s, %s)\n", tb.Config, queue, tb.NS(HostA), tb.NS(Router), tb.NS(HostB))
	if o.measure != "none" {
		checks, err := SelfMeasure(ctx, tb, o.measure, o.tcpTool, log)
		if err != nil {
			return 1, interrupted(ctx, tb.explain(err))
		}
		table := o.stdout
		if len(o.client) > 0 {
			table = log
		}
		ok := printChecks(table, checks)
		st := printDelayStats(log, tb)
		if !ok {
			fmt.Fprintln(log, "testbed: WARNING: the link is out of tolerance; results across it are suspect")
		}
		if note := st.StallNote(); note != "" {
			fmt.Fprintln(log, "testbed: note:", note)
		}
	}
	if len(o.client) == 0 {
		return 0, tb.Dead()
	}
	return runCommands(ctx, tb, o)
}

func printDelayStats(w io.Writer, tb *Testbed) DelayLineStats {
	s, err := tb.DelayStats()
	if err != nil {
		fmt.Fprintln(w, "testbed: delay line:", err)
		return s
	}
	fmt.Fprintf(w, "testbed: delay line: %d packets forwarded, %d dropped (line full), %d dropped (TUN queue full), nice −20 %v\n",
		s.Forwarded, s.Dropped, s.TunDropped, s.HighPriority)
	fmt.Fprintf(w, "testbed: delay line release lateness: %s; worst %.1f ms\n", s.LateSummary(), float64(s.MaxLate)/1e6)
	return s
}

// runCommands starts the server on B (if any), waits serverWait, runs the
// client on A and returns its exit code; the server is then stopped.
func runCommands(ctx context.Context, tb *Testbed, o *options) (int, error) {
	subst := func(args []string) []string {
		r := strings.NewReplacer("{A}", tb.Addr(HostA).String(), "{B}", tb.Addr(HostB).String())
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = r.Replace(a)
		}
		return out
	}
	if len(o.server) > 0 {
		s := subst(o.server)
		srv := tb.Command(ctx, HostB, s[0], s[1:]...)
		srv.Stdout, srv.Stderr = prefixWriter(o.stdout, "B| "), prefixWriter(o.stderr, "B| ")
		if err := tb.Start(srv); err != nil {
			return 1, fmt.Errorf("server on B: %w", err)
		}
		defer stopProcess(srv, 0)
		select {
		case <-ctx.Done():
			return 1, interrupted(ctx, tb.explain(ctx.Err()))
		case <-timeAfter(o.serverWait):
		}
	}
	c := subst(o.client)
	cli := tb.Command(ctx, HostA, c[0], c[1:]...)
	cli.Stdin, cli.Stdout, cli.Stderr = os.Stdin, o.stdout, o.stderr
	if err := tb.Start(cli); err != nil {
		return 1, fmt.Errorf("client on A: %w", err)
	}
	err := cli.Wait()
	if ctx.Err() != nil {
		return 1, interrupted(ctx, tb.explain(ctx.Err()))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return max(ee.ExitCode(), 1), nil
	}
	return 0, err
}

// interrupted turns errors caused by a signal into one clear message; a testbed that died
// (*DeadError) says so instead.
func interrupted(ctx context.Context, err error) error {
	var de *DeadError
	switch {
	case errors.As(err, &de):
		return de
	case errors.As(context.Cause(ctx), &de):
		return de
	case ctx.Err() != nil:
		return errors.New("interrupted; removed the namespaces")
	}
	return err
}
