// Command pacerbench measures how precisely each pacer.Waiter backend waits, and what that
// precision means for a paced sender.
//
// Usage:
//
//	pacerbench [wait] [flags]    N waits of each length per backend: the timer-precision table
//	pacerbench periodic [flags]  K periodic tasks on one pacer.Pacer: interval AVG, STDDEV, P(±5µs)
//	pacerbench rate [flags]      a UDP sender on loopback paced at each of -rates and -tolerances:
//	                             achieved rate, departure error, packets per wake, wakes/s, CPU
//
// Common flags: -backends a,b,… (default all this system supports), -n N, -json (one JSON array
// on stdout, nothing else there), -plot FILE.png (wait, periodic: histograms per backend; rate:
// the frontier, pacing CPU against p99 departure error). Progress goes to stderr. Run
// `pacerbench MODE -h` for each mode's flags.
//
// All times printed are in µs. CPU figures come from getrusage(RUSAGE_SELF). In wait and
// periodic mode that is the whole process; in rate mode the receiver runs in a child process, so
// the sender's figure has no receive path in it, and on Linux the pacing thread's own CPU
// (CLOCK_THREAD_CPUTIME_ID of the thread running the pacer's goroutine, from one Release to the
// next: see threadCPU) is shown beside it, with the total of both processes.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/pacer"
)

var modes = []string{"wait", "periodic", "rate"}

// common are the flags every mode takes.
type common struct {
	backends []string
	n        int
	json     bool
	plot     string
	stdout   io.Writer
	stderr   io.Writer
}

// usageError is a bad command line: main prints it as one line and exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	if os.Getenv(receiverEnv) == "1" {
		os.Exit(receiverMain())
	}
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintf(os.Stderr, "pacerbench: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "pacerbench: %v\n", err)
		os.Exit(1)
	}
}

// run executes one command line. Results go to stdout (a table, or JSON with -json); progress,
// notes and -h help go to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	mode := "wait"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("pacerbench "+mode, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		c        = common{stdout: stdout, stderr: stderr}
		backends = fs.String("backends", "", "comma-separated backends (valid: "+strings.Join(pacer.WaiterNames(), ", ")+"; default all supported)")
	)
	fs.BoolVar(&c.json, "json", false, "print one JSON array on stdout instead of the table")
	plotHelp := map[string]string{
		"wait":     "write histograms of the wait lateness per backend to this PNG file",
		"periodic": "write histograms of the interval error per backend to this PNG file",
		"rate":     "write the CPU-against-precision frontier (a scatter plot) to this PNG file",
	}[mode]
	fs.StringVar(&c.plot, "plot", "", plotHelp)
	var exec func() error
	switch mode {
	case "wait":
		fs.IntVar(&c.n, "n", 10000, "waits per backend and wait length")
		waits := fs.String("waits", "10us,50us,100us,500us,800us", "comma-separated wait lengths (Go durations, > 0)")
		exec = func() error { return waitMode(c, *waits) }
	case "periodic":
		var p periodicConfig
		fs.IntVar(&c.n, "n", 0, "stop each task after N intervals (0: run for -duration)")
		fs.IntVar(&p.tasks, "tasks", 10, "number of concurrent periodic tasks (≥ 1)")
		fs.DurationVar(&p.base, "base", 500e3, "period of task 0 (> 0)")
		fs.DurationVar(&p.step, "step", 13e3, "period increment per task (≥ 0): task i runs every base+i·step")
		fs.DurationVar(&p.duration, "duration", 10e9, "run time per backend (> 0)")
		exec = func() error { return periodicMode(c, p) }
	case "rate":
		var r rateConfig
		fs.IntVar(&c.n, "n", 0, "stop after N packets per run (0: run for -duration)")
		rates := "10mbit,100mbit,1gbit"
		ratesName := "-rates" // the flag the user typed, for its error
		ratesFlag := func(name string) func(string) error {
			return func(v string) error { rates, ratesName = v, name; return nil }
		}
		fs.Func("rates", "comma-separated target rates in bit/s, each at least one 1472-byte packet per -duration: a number with an optional k, M, G or T prefix and unit bit or bit/s, e.g. 500mbit, 100m, 1.5Gbit, 750Mbit/s (not \"bps\", which tc reads as bytes) (default "+rates+")", ratesFlag("-rates"))
		fs.Func("rate", "the same as -rates, for one rate", ratesFlag("-rate"))
		tols := fs.String("tolerances", "0,default", "comma-separated pacing tolerances: Go durations ≥ 0 (0: exact) or \"default\" (pacer.DefaultTolerance)")
		fs.DurationVar(&r.duration, "duration", 3e9, "send time per run (> 0)")
		fs.BoolVar(&r.strict, "strict", false, "strict pacing: no catch-up, each packet waits a full interval after the previous one")
		exec = func() error {
			var err error
			if r.rates, err = parseRates(ratesName, rates); err != nil {
				return err
			}
			for _, v := range r.rates {
				// Below a packet per run the pacer's first departure lies beyond the run's end
				// (and below 8 bit/s the byte rate rounds to 0, unpaced).
				if least := datagram * 8 / r.duration.Seconds(); v < least {
					return usagef("%s %s: below one %d-byte packet per -duration %v (%.0f bit/s)", ratesName, congestion.FormatRate(int64(v)), datagram, r.duration, least)
				}
			}
			if r.tolerances, err = parseTolerances(*tols); err != nil {
				return err
			}
			return rateMode(c, r)
		}
	case "help": // pacerbench help [MODE]
		if len(args) > 0 {
			return run([]string{args[0], "-h"}, stdout, stderr)
		}
		return run([]string{"-h"}, stdout, stderr)
	default:
		return usagef("unknown mode %q (valid: %s)", mode, strings.Join(modes, ", "))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintf(stderr, "usage: pacerbench [%s] [flags]  (the mode comes first; wait if none; pacerbench help MODE)\n\n", strings.Join(modes, "|"))
			fmt.Fprintf(stderr, "  wait      each backend's lateness for waits of given lengths (the classic timer table)\n")
			fmt.Fprintf(stderr, "  periodic  concurrent periodic tasks: each interval's error per backend\n")
			fmt.Fprintf(stderr, "  rate      a paced sender at target rates: achieved rate, lateness and CPU per backend\n\n")
			fmt.Fprintf(stderr, "flags of pacerbench %s (pacerbench MODE -h for another mode's):\n", mode)
			fs.PrintDefaults()
			return err
		}
		return usagef("%v (run pacerbench %s -h for the valid flags)", err, mode)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (modes: %s; flags come after the mode)", fs.Arg(0), strings.Join(modes, ", "))
	}
	if c.n < 0 {
		return usagef("-n %d: must be ≥ 0", c.n)
	}
	if mode == "wait" && c.n == 0 {
		return usagef("-n 0: wait mode needs at least 1 wait")
	}
	var err error
	if c.backends, err = parseBackends(*backends, stderr); err != nil {
		return err
	}
	return exec()
}

// parseBackends checks a -backends list against pacer.WaiterNames. The default (empty) is every
// backend this system supports.
func parseBackends(list string, stderr io.Writer) ([]string, error) {
	valid := pacer.WaiterNames()
	if list == "" {
		var out []string
		for _, name := range valid {
			w, err := pacer.NewWaiter(name)
			if err != nil {
				fmt.Fprintf(stderr, "pacerbench: skipping %s: %v\n", name, err)
				continue
			}
			closeWaiter(w)
			out = append(out, name)
		}
		return out, nil
	}
	var out []string
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		known := false
		for _, v := range valid {
			known = known || v == name
		}
		if !known {
			return nil, usagef("unknown backend %q (valid: %s)", name, strings.Join(valid, ", "))
		}
		w, err := pacer.NewWaiter(name)
		if err != nil {
			return nil, usagef("backend %s unavailable here: %v", name, err)
		}
		closeWaiter(w)
		out = append(out, name)
	}
	return out, nil
}

func closeWaiter(w pacer.Waiter) {
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
}

// emitJSON prints rows as one JSON array.
func emitJSON(w io.Writer, rows any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}
