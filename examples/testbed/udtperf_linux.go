//go:build linux

package main

// The udt and quic rows of the matrix: they run examples/udtperf (issue 5)
// inside the namespaces, `udtperf server` on B and `udtperf client` on A. This
// file is the only place that knows udtperf's command line and JSON.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// udtperfPort is the port udtperf's server listens on, on B.
const udtperfPort = 9000

// buildUdtperf compiles ./examples/udtperf of the module that contains the
// working directory into dir and returns the binary's path.
func buildUdtperf(ctx context.Context, dir string) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("udtperf: `go env GOMOD`: %v (is Go installed? or pass -udtperf BINARY)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return "", errors.New("udtperf: run the matrix inside the udt module, or pass -udtperf BINARY")
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "udtperf")); err != nil {
		return "", fmt.Errorf("udtperf: %s/examples/udtperf does not exist yet", root)
	}
	bin := filepath.Join(dir, "udtperf")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/udtperf")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("udtperf: go build: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// udtperfRunner runs one udtperf transfer A→B with -proto proto.
type udtperfRunner struct {
	bin       string
	proto     string // udt, udt-native (udt with udtCC's -cc) or quic
	pacer     string // udt: -pacer of the client (the sender); "" = udtperf's default
	tolerance string // udt: -pacing-tolerance of the client; "" = udtperf's default
	traceDir  string // if set, udt transfers keep their trace there
}

// traceFile is the trace of proto's transfer over the testbed's path: PROTO-RTT-LOSS.jsonl.
func traceFile(dir, proto string, c Config) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%gmbit-%vms-%gpct.jsonl", proto, float64(c.Rate)/1e6, c.RTT.Milliseconds(), c.Loss))
}

func (r udtperfRunner) Run(ctx context.Context, tb *Testbed, dur time.Duration) (Row, error) {
	var row Row
	ctx, cancel := context.WithTimeout(ctx, dur+60*time.Second)
	defer cancel()
	listen := netip.AddrPortFrom(tb.Addr(HostB), udtperfPort).String()
	srv := tb.Command(ctx, HostB, r.bin, "server", "-listen", listen, "-once", "-no-progress")
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := tb.Start(srv); err != nil {
		return row, fmt.Errorf("udtperf server: %w", err)
	}
	defer stopProcess(srv, 2*time.Second) // -once: it exits after the transfer
	select {                              // udtperf has no readiness signal; a listener is up well within this
	case <-ctx.Done():
		return row, ctx.Err()
	case <-time.After(500 * time.Millisecond):
	}
	args := []string{"client", "-connect", listen, "-proto", r.proto, "-time", dur.String(), "-json", "-no-progress"}
	if cc, ok := udtCC[r.proto]; ok {
		args[4] = protoUDT
		if cc != "" {
			args = append(args, "-cc", cc)
		}
	}
	if r.pacer != "" && r.proto != protoQUIC {
		args = append(args, "-pacer", r.pacer)
	}
	if r.tolerance != "" && r.proto != protoQUIC {
		args = append(args, "-pacing-tolerance", r.tolerance)
	}
	if r.traceDir != "" && r.proto != protoQUIC {
		args = append(args, "-trace", traceFile(r.traceDir, r.proto, tb.Config))
	}
	cli := tb.Command(ctx, HostA, r.bin, args...)
	var stdout, stderr bytes.Buffer
	cli.Stdout, cli.Stderr = &stdout, &stderr
	if err := tb.Start(cli); err != nil {
		return row, fmt.Errorf("udtperf client: %w", err)
	}
	werr := cli.Wait()
	want := r.proto
	if _, ok := udtCC[want]; ok {
		want = protoUDT
	}
	row, perr := parseUdtperfJSON(stdout.Bytes(), want)
	row.Protocol = r.proto
	if r.tolerance != "" && row.Backend != "" {
		row.Backend += " tol " + r.tolerance
	}
	if werr != nil {
		return row, fmt.Errorf("udtperf client: %v: %s", werr, lastLine(stderr.String()))
	}
	return row, perr
}

// udtperfResult holds the fields of udtperf's JSON the matrix uses (issue 5:
// "goodput_mbps", "retrans_pct", "rtt_ms", "sha256_ok", "protocol").
type udtperfResult struct {
	Protocol    string   `json:"protocol"`
	Backend     string   `json:"backend"`
	SenderCPU   *float64 `json:"sender_cpu_s_per_gb"`
	GoodputMbps *float64 `json:"goodput_mbps"`
	RetransPct  float64  `json:"retrans_pct"`
	RTTms       float64  `json:"rtt_ms"`
	SHA256OK    bool     `json:"sha256_ok"`
	Seconds     float64  `json:"seconds"`
	Error       string   `json:"error"`
}

// parseUdtperfJSON reads the client's -json document: either one result
// object or {"results": [...]}, in which case the row for proto is used.
func parseUdtperfJSON(b []byte, proto string) (Row, error) {
	var row Row
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return row, errors.New("udtperf printed no JSON")
	}
	var doc struct {
		udtperfResult
		Results []udtperfResult `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return row, fmt.Errorf("udtperf JSON: %w", err)
	}
	res := doc.udtperfResult
	if len(doc.Results) > 0 {
		res = doc.Results[0]
		for _, r := range doc.Results {
			if r.Protocol == proto {
				res = r
				break
			}
		}
	}
	if res.GoodputMbps == nil {
		return row, errors.New(`udtperf JSON has no "goodput_mbps"`)
	}
	row.GoodputMbps, row.RetransPct, row.SHA256OK, row.Seconds = *res.GoodputMbps, res.RetransPct, res.SHA256OK, res.Seconds
	row.Backend, row.SenderCPU = res.Backend, res.SenderCPU
	if res.Error != "" {
		return row, errors.New(res.Error)
	}
	return row, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
