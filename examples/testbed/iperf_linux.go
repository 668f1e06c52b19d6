//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// iperfPort is the port of the iperf3 server on B.
const iperfPort = 5202

// RunIperf3 runs an iperf3 server on B and a client on A (A→B, congestion
// control cc, dur seconds after warmup omitted seconds) and returns the
// receiver's goodput and the sender's retransmissions. SHA256OK stays false:
// iperf3 does not check the stream.
func RunIperf3(ctx context.Context, tb *Testbed, cc string, dur, warmup time.Duration) (TCPResult, error) {
	res := TCPResult{CC: cc}
	secs := func(d time.Duration) string { return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) }
	srv := tb.Command(ctx, HostB, "iperf3", "-s", "-1", "-B", tb.Addr(HostB).String(), "-p", strconv.Itoa(iperfPort))
	if err := tb.Start(srv); err != nil {
		return res, fmt.Errorf("iperf3 server: %w", err)
	}
	defer stopProcess(srv, 2*time.Second)
	// iperf3 -s needs a moment to listen; the client retries are not
	// configurable, so poll with short client attempts.
	var out []byte
	var err error
	for try := 0; try < 20; try++ {
		cli := tb.Command(ctx, HostA, "iperf3", "-c", tb.Addr(HostB).String(), "-B", tb.Addr(HostA).String(),
			"-p", strconv.Itoa(iperfPort), "-t", secs(dur-warmup), "-O", secs(warmup), "-C", cc, "-J")
		out, err = cli.Output()
		var probe struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(out, &probe)
		if !isConnRefused(probe.Error) {
			break // success, or an error reported below
		}
		err = errors.New(probe.Error)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	var rep struct {
		Start struct {
			TCPMSSDefault int `json:"tcp_mss_default"`
		} `json:"start"`
		End struct {
			SumSent struct {
				Bytes       float64 `json:"bytes"`
				Retransmits float64 `json:"retransmits"`
			} `json:"sum_sent"`
			SumReceived struct {
				Bytes         float64 `json:"bytes"`
				Seconds       float64 `json:"seconds"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			Streams []struct {
				Sender struct {
					MeanRTT float64 `json:"mean_rtt"` // µs
				} `json:"sender"`
			} `json:"streams"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		return res, fmt.Errorf("iperf3 client: %v (output not JSON: %v)", err, jerr)
	}
	if rep.Error != "" {
		return res, fmt.Errorf("iperf3: %s", rep.Error)
	}
	if err != nil {
		return res, fmt.Errorf("iperf3 client: %w", err)
	}
	res.Goodput = rep.End.SumReceived.BitsPerSecond
	res.Bytes = int64(rep.End.SumReceived.Bytes)
	res.MeasuredFor = time.Duration(rep.End.SumReceived.Seconds * float64(time.Second))
	res.MSS = rep.Start.TCPMSSDefault
	if mss := rep.Start.TCPMSSDefault; mss > 0 && rep.End.SumSent.Bytes > 0 {
		res.RetransPct = rep.End.SumSent.Retransmits * float64(mss) / rep.End.SumSent.Bytes * 100
	}
	if len(rep.End.Streams) > 0 {
		res.SRTT = time.Duration(rep.End.Streams[0].Sender.MeanRTT) * time.Microsecond
	}
	return res, nil
}

func isConnRefused(s string) bool {
	return strings.Contains(s, "Connection refused") || strings.Contains(s, "unable to connect")
}
