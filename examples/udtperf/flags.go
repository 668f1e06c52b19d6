package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/pacer"
)

// errHelp ends a run after -h printed the usage: exit status 0.
var errHelp = flag.ErrHelp

// protocols udtperf can measure, in the order self mode runs them.
var protocols = []string{"udt", "tcp", "quic"}

// transportFlags configure the connection on either side.
type transportFlags struct {
	pacer     string // one backend name, or for self mode a comma list
	cc        string
	ccFactory congestion.Factory
	strict    bool
	tcpCC     string        // kernel TCP congestion control of a tcp sender; "" = the host's default
	tolerance toleranceFlag // conn.Config.PacingTolerance
	mss       int
	handshake time.Duration
	idle      time.Duration
	message   bool                              // udt message mode (Config.MessageMode): server -message, client and self -message SIZE
	tracer    func(trace.ConnInfo) trace.Tracer // udt: the connection's trace (client -trace); not a flag
}

func (t *transportFlags) register(fs *cmdFlags, pacerHelp string) {
	fs.StringVar(&t.pacer, "pacer", t.pacer, pacerHelp)
	fs.StringVar(&t.cc, "cc", "bbr", "udt congestion control: bbr (the default, model-based), udt (UDT 4.11's native DAIMD) or fixed:RATE (e.g. fixed:500mbit)")
	fs.BoolVar(&t.strict, "strict", false, "udt strict pacing: no catch-up after a late wake (shows a coarse timer's ceiling)")
	fs.StringVar(&t.tcpCC, "tcp-cc", "", "tcp sender's kernel congestion control, e.g. cubic or bbr (default: the host's, net.ipv4.tcp_congestion_control; Linux)")
	fs.Var(&t.tolerance, "pacing-tolerance", "udt pacing tolerance of the sender: default (pacer.DefaultTolerance, 200µs), 0 or exact (exact pacing), or a duration like 100us. "+
		"Here 0 means exact, unlike conn.Config.PacingTolerance, where 0 means the default and a negative value exact pacing (pacer.Exact)")
	fs.IntVar(&t.mss, "mss", 1500, "udt maximum segment size in bytes, IP and UDP headers included")
	fs.DurationVar(&t.handshake, "handshake-timeout", 3*time.Second, "give up connecting after this long")
	fs.DurationVar(&t.idle, "idle-timeout", 10*time.Second, "declare the peer dead after this long without a packet")
}

func (t *transportFlags) validate(pacers []string) error {
	for _, p := range pacers {
		if !slices.Contains(pacer.WaiterNames(), p) {
			return fmt.Errorf("unknown -pacer %q (want one of %s)", p, strings.Join(pacer.WaiterNames(), ", "))
		}
	}
	f, err := congestion.ParseSpec(t.cc)
	if err != nil {
		return fmt.Errorf("bad -cc: %v", err)
	}
	t.ccFactory = f
	if t.mss < 92 || t.mss > 65535 { // conn.Config.MSS: a handshake datagram is 92 bytes
		return fmt.Errorf("-mss %d out of range [92, 65535]", t.mss)
	}
	if t.tcpCC != "" {
		if err := checkTCPCongestion(t.tcpCC); err != nil {
			return fmt.Errorf("bad -tcp-cc: %v", err)
		}
	}
	if t.handshake <= 0 || t.idle <= 0 {
		return errors.New("-handshake-timeout and -idle-timeout must be positive")
	}
	return nil
}

// outputFlags shape what is printed, in every mode.
type outputFlags struct {
	json       bool
	interval   time.Duration
	cpuprofile string
	noProgress bool
}

func (o *outputFlags) register(fs *cmdFlags, interval time.Duration) {
	fs.BoolVar(&o.json, "json", false, "print one JSON document on stdout instead of text (logs stay on stderr)")
	fs.DurationVar(&o.interval, "interval", interval, "per-interval report period (0 = none)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write this process's CPU profile to the file")
	fs.BoolVar(&o.noProgress, "no-progress", false, "no progress bar even on a terminal")
}

func (o *outputFlags) validate() error {
	if o.interval < 0 || (o.interval > 0 && o.interval < 10*time.Millisecond) {
		return fmt.Errorf("-interval %v: want 0 (off) or at least 10ms", o.interval)
	}
	return nil
}

// limitFlags bound one transfer.
type limitFlags struct {
	time  time.Duration
	bytes sizeFlag
}

func (l *limitFlags) register(fs *cmdFlags, def time.Duration, what string) {
	fs.DurationVar(&l.time, "time", def, "transfer duration"+what+" (ignored with -bytes)")
	fs.Var(&l.bytes, "bytes", "transfer this many bytes"+what+" instead of -time (e.g. 2MiB, 1GiB, 500MB)")
}

func (l *limitFlags) validate() error {
	if l.bytes > 0 {
		l.time = 0
		return nil
	}
	if l.time <= 0 {
		return errors.New("-time must be positive (or give -bytes)")
	}
	if l.time > maxTransferTime {
		return fmt.Errorf("-time %v longer than %v", l.time, maxTransferTime)
	}
	return nil
}

// selfOptions: loopback self mode.
type selfOptions struct {
	out    outputFlags
	tr     transportFlags
	limit  limitFlags
	msg    msgFlags
	protos []string
	pacers []string
}

// serverOptions: `udtperf server` and the hidden self-mode child.
type serverOptions struct {
	out    outputFlags
	tr     transportFlags
	listen string
	protos []string
	dir    string
	force  bool
	once   bool
	// keepPartial is how long the partial file of an upload that broke off is kept for
	// -resume; 0 removes it at once.
	keepPartial time.Duration
}

// clientOptions: `udtperf client`.
type clientOptions struct {
	out     outputFlags
	tr      transportFlags
	limit   limitFlags
	connect string
	proto   string
	reverse bool
	file    string
	msg     msgFlags
	resume  bool
	trace   string // -trace FILE
}

// newFlagSet returns a flag set that reports errors to the caller, not by exiting; usage goes
// to stderr only on -h.
func newFlagSet(name, synopsis string, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are reported in one line by run; -h prints the usage below
	return &cmdFlags{fs, func() {
		fs.SetOutput(stderr)
		if strings.Contains(synopsis, "\n") {
			fmt.Fprintf(stderr, "%s\n", synopsis)
		} else {
			fmt.Fprintf(stderr, "usage: %s\n\n", synopsis)
		}
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}}
}

// cmdFlags is a subcommand's flag set and its -h text.
type cmdFlags struct {
	*flag.FlagSet
	usage func()
}

func parseFlags(fs *cmdFlags, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.usage()
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

func parseSelf(args []string, stderr io.Writer) (*selfOptions, error) {
	o := &selfOptions{}
	fs := newFlagSet("udtperf", topUsage+"\nSelf-mode flags:", stderr)
	o.out.register(fs, 0)
	o.tr.pacer = strings.Join(pacer.WaiterNames(), ",")
	o.tr.register(fs, "udt pacer backends to measure, comma-separated")
	o.limit.register(fs, selfDefaultTime, " per row")
	protos := fs.String("proto", strings.Join(protocols, ","), "protocols to measure, comma-separated: udt, tcp, quic")
	o.msg.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := o.msg.validate(); err != nil {
		return nil, usageError{err}
	}
	o.pacers = splitList(o.tr.pacer)
	o.protos = splitList(*protos)
	if err := validateProtos(o.protos); err != nil {
		return nil, usageError{err}
	}
	for _, err := range []error{o.out.validate(), o.tr.validate(o.pacers), o.limit.validate()} {
		if err != nil {
			return nil, usageError{err}
		}
	}
	return o, nil
}

func parseServer(name string, args []string, stderr io.Writer) (*serverOptions, error) {
	o := &serverOptions{}
	fs := newFlagSet(name, "udtperf server [-listen :9000] [flags]", stderr)
	o.out.register(fs, 0)
	o.tr.pacer = pacer.DefaultWaiter
	o.tr.register(fs, "udt pacer backend when this server sends (-reverse clients): "+strings.Join(pacer.WaiterNames(), ", "))
	fs.StringVar(&o.listen, "listen", ":9000", "address HOST:PORT to listen on (empty HOST: all addresses)")
	protos := fs.String("proto", strings.Join(protocols, ","), "protocols to serve, comma-separated (udt on UDP PORT, tcp on TCP PORT, quic on UDP PORT+1)")
	fs.StringVar(&o.dir, "dir", "", "store files sent with -file in this directory (file uploads are refused without it)")
	fs.BoolVar(&o.force, "force", false, "overwrite existing files in -dir")
	fs.BoolVar(&o.once, "once", false, "exit after the first transfer")
	fs.BoolVar(&o.tr.message, "message", false, "serve udt in message mode (Config.MessageMode) for clients with -message: stream clients are refused")
	fs.DurationVar(&o.keepPartial, "keep-partial", 24*time.Hour, "keep the partial file of an upload that broke off this long, for the client's -resume (0: remove it at once)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	o.protos = splitList(*protos)
	if err := validateProtos(o.protos); err != nil {
		return nil, usageError{err}
	}
	if err := o.out.validate(); err != nil {
		return nil, usageError{err}
	}
	if _, _, err := splitListen(o.listen); err != nil {
		return nil, usageError{err}
	}
	if o.dir != "" {
		if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
			return nil, usageError{fmt.Errorf("-dir %s is not a directory", o.dir)}
		}
	}
	if o.keepPartial < 0 {
		return nil, usageError{errors.New("-keep-partial must not be negative")}
	}
	if err := o.tr.validate([]string{o.tr.pacer}); err != nil {
		return nil, usageError{err}
	}
	return o, nil
}

func parseClient(args []string, stderr io.Writer) (*clientOptions, error) {
	o := &clientOptions{}
	fs := newFlagSet("udtperf client", "udtperf client -connect HOST:PORT [flags]", stderr)
	o.out.register(fs, time.Second)
	o.tr.pacer = pacer.DefaultWaiter
	o.tr.register(fs, "udt pacer backend: "+strings.Join(pacer.WaiterNames(), ", "))
	o.limit.register(fs, 10*time.Second, "")
	fs.StringVar(&o.connect, "connect", "", "server address HOST:PORT as given to its -listen (required; quic goes to PORT+1)")
	fs.StringVar(&o.proto, "proto", "udt", "protocol: udt, tcp or quic")
	fs.BoolVar(&o.reverse, "reverse", false, "the server sends, the client receives")
	fs.StringVar(&o.file, "file", "", "send this file; the server stores it under its -dir (with the base name)")
	o.msg.register(fs)
	fs.StringVar(&o.trace, "trace", "", "udt: write the connection's trace (every packet, ACK, NAK, RTT, controller decision) to this file as JSON lines; see udtperf plot")
	fs.BoolVar(&o.resume, "resume", false, "with -file: continue an upload that broke off from what the server holds (checked by SHA-256)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := o.msg.validate(); err != nil {
		return nil, usageError{err}
	}
	if o.msg.size > 0 && (o.proto != "udt" || o.reverse || o.file != "") {
		return nil, usageError{errors.New("-message needs -proto udt, without -reverse or -file")}
	}
	if o.connect == "" {
		return nil, usageError{errors.New("client needs -connect HOST:PORT")}
	}
	if _, port, err := net.SplitHostPort(o.connect); err != nil || port == "" {
		return nil, usageError{fmt.Errorf("bad -connect %q: want HOST:PORT", o.connect)}
	}
	if err := validateProtos([]string{o.proto}); err != nil {
		return nil, usageError{err}
	}
	if o.file != "" && o.reverse {
		return nil, usageError{errors.New("-file and -reverse cannot be combined (a file is always sent by the client)")}
	}
	if o.trace != "" && o.proto != "udt" {
		return nil, usageError{fmt.Errorf("-trace traces udt connections, not %s", o.proto)}
	}
	if o.resume && o.file == "" {
		return nil, usageError{errors.New("-resume needs -file")}
	}
	if o.file != "" {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "bytes" || f.Name == "time" {
				set = append(set, "-"+f.Name)
			}
		})
		if len(set) > 0 {
			verb := "does"
			if len(set) > 1 {
				verb = "do"
			}
			return nil, usageError{fmt.Errorf("-file sends the whole file: %s %s not apply", strings.Join(set, " and "), verb)}
		}
	}
	if o.reverse {
		var set []string // sender-side flags, which the server's own flags decide with -reverse
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "cc" || f.Name == "pacer" || f.Name == "strict" || f.Name == "tcp-cc" {
				set = append(set, "-"+f.Name)
			}
		})
		if len(set) > 0 {
			return nil, usageError{fmt.Errorf("%s configure the sender, which with -reverse is the server: give them to udtperf server", strings.Join(set, ", "))}
		}
	}
	for _, err := range []error{o.out.validate(), o.tr.validate([]string{o.tr.pacer}), o.limit.validate()} {
		if err != nil {
			return nil, usageError{err}
		}
	}
	return o, nil
}

func validateProtos(ps []string) error {
	if len(ps) == 0 {
		return errors.New("-proto is empty")
	}
	for _, p := range ps {
		if !slices.Contains(protocols, p) {
			return fmt.Errorf("unknown -proto %q (want udt, tcp or quic)", p)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// sizeFlag is a byte count with an optional unit: B; K, M, G, T (or KB…) in powers of 1000;
// KiB, MiB, GiB, TiB in powers of 1024.
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseSize parses "2MiB", "1GiB", "500MB", "1000" into bytes (at least 1, at most maxTransferBytes).
func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	f, err := strconv.ParseFloat(t[:i], 64)
	if !ok || err != nil || i == 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 2MiB, 1GiB, 500MB or a byte count)", v)
	}
	b := math.Round(f * mult)
	if b < 1 || b > maxTransferBytes {
		return 0, fmt.Errorf("size %q out of range [1 B, 1 PiB]", v)
	}
	return int64(b), nil
}

const (
	maxTransferTime  = 24 * time.Hour
	maxTransferBytes = 1 << 50
	selfDefaultTime  = 5 * time.Second
)

// toleranceFlag is -pacing-tolerance as a conn.Config.PacingTolerance: 0 is the default,
// pacer.Exact none. On the command line "0" means none, as a tolerance of zero reads.
type toleranceFlag time.Duration

func (t *toleranceFlag) String() string {
	switch d := time.Duration(*t); {
	case d == 0:
		return "default"
	case d < 0:
		return "exact"
	default:
		return d.String()
	}
}

func (t *toleranceFlag) Set(s string) error {
	switch s = strings.TrimSpace(s); s {
	case "default":
		*t = 0
		return nil
	case "exact", "0":
		*t = toleranceFlag(pacer.Exact)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want default, exact, 0 or a positive duration like 100us, not %q", s)
	}
	*t = toleranceFlag(d)
	return nil
}
