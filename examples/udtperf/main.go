// Command udtperf is udt's bulk-transfer benchmark: iperf3 for UDT, with TCP and QUIC
// (quic-go) as baselines, and a file sender.
//
// Usage:
//
//	udtperf [flags]                            self mode: every protocol and pacer backend on loopback, one table
//	udtperf server [-listen :9000] [flags]     serve clients (concurrently), report each transfer
//	udtperf client -connect HOST:PORT [flags]  one transfer: -time 10s or -bytes 1GiB, -reverse, -file PATH
//	udtperf plot TRACE [-o out.png]            plot a trace written by client -trace TRACE
//
// Every transfer runs the same small protocol (see wire.go): a hello with the mode, then framed
// data, then both ends exchange the stream's SHA-256, byte count, CPU time and transport
// statistics, so that either end can print the whole row. A digest mismatch is an error.
//
// Output: per-interval lines (-interval), a table of results, or with -json one JSON document
// {"results": [...]} on stdout; progress and errors go to stderr. Errors print one line
// "udtperf: ..." and exit with status 1 (2 for bad flags, 130 when interrupted): a transfer
// that did not complete and verify is always an error, in every mode. The first SIGINT (or
// SIGTERM) aborts the transfers in progress, closing their connections so that each peer
// learns at once; a second one exits at once.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run executes udtperf with args (without the program name) and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	}
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " ")
	fmt.Fprintf(stderr, "udtperf: %s\n", msg)
	var ue usageError
	var ie interruptedError
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &ie):
		return exitInterrupted
	}
	return 1
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	cmd := "self"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "self":
		o, err := parseSelf(args, stderr)
		if err != nil {
			return err
		}
		return runSelf(o, stdout, stderr)
	case "server":
		o, err := parseServer("server", args, stderr)
		if err != nil {
			return err
		}
		return runServer(o, stdout, stderr)
	case selfServerCmd:
		o, err := parseServer(selfServerCmd, args, stderr)
		if err != nil {
			return err
		}
		return runSelfServer(o, stdout, stderr)
	case "client":
		o, err := parseClient(args, stderr)
		if err != nil {
			return err
		}
		return runClient(o, stdout, stderr)
	case "plot":
		o, err := parsePlot(args, stderr)
		if err != nil {
			return err
		}
		return runPlot(o, stdout, stderr)
	case "help":
		fmt.Fprint(stderr, topUsage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q (want server, client, plot or self; see udtperf -h)", cmd)}
}

const topUsage = `udtperf: bulk-transfer benchmark for udt, with TCP and QUIC baselines

  udtperf [flags]                            self mode on loopback: every udt pacer backend, tcp and quic
  udtperf server [-listen :9000] [flags]     serve clients, report each transfer
  udtperf client -connect HOST:PORT [flags]  one transfer (-time, -bytes, -reverse, -file; -trace FILE)
  udtperf plot TRACE [-o out.png]            plot a -trace file: rates, RTT, windows, losses over time

Run "udtperf server -h" or "udtperf client -h" for their flags.
`
