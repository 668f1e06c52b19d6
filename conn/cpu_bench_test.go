package conn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
)

// sinkEnv makes the test binary the receiving process of BenchmarkBulkCPU (TestBulkSink); its
// value is the pacer backend.
const sinkEnv = "UDT_BENCH_SINK"

// sinkProfileEnv names a file prefix for the receiving process's CPU profile (one file per pacer
// backend, PREFIX.NAME), the receiver's half of what -cpuprofile gives for the sender:
//
//	UDT_BENCH_SINK_CPUPROFILE=/tmp/rcv.prof go test -run '^$' -bench BulkCPU -cpuprofile /tmp/snd.prof ./conn/
const sinkProfileEnv = "UDT_BENCH_SINK_CPUPROFILE"

// TestBulkSink is the receiver of BenchmarkBulkCPU, in a process of its own so that getrusage
// separates its CPU from the sender's; it skips unless sinkEnv is set. It accepts one connection,
// reads it to EOF without looking at the bytes and prints its figures on stdout.
func TestBulkSink(t *testing.T) {
	pacerName := os.Getenv(sinkEnv)
	if pacerName == "" {
		t.Skip("the receiving process of BenchmarkBulkCPU")
	}
	ln, err := Listen("udp", "127.0.0.1:0", &Config{Pacer: pacerName})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fmt.Printf("sink-addr %s\n", ln.Addr())
	c, err := ln.AcceptUDT(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cpu0 := cputime.Process()
	n, err := io.CopyBuffer(io.Discard, c, make([]byte, lockChunk))
	cpu := cputime.Process() - cpu0
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	fmt.Printf("sink-result %d %d %d\n", n, cpu.Nanoseconds(), st.PktRecv)
	c.Close()
}

// BenchmarkBulkCPU measures the CPU each end spends per data packet at full speed over UDP
// loopback, default Config (MSS 1500: 1456-byte payloads), no hashing: b.N chunks of 1 MiB from
// this process to a receiver in a child process (this test binary running TestBulkSink).
// snd-ns/pkt is this process's CPU (writing, pacing, sending, ACK processing) per data packet
// sent, retransmissions included; rcv-ns/pkt the child's (reading, ACKs, Read) per data packet
// received. Both include the pacer's waits (the hybrid backend spins briefly before each
// deadline) and the runtime's own work.
func BenchmarkBulkCPU(b *testing.B) {
	for _, name := range []string{"hybrid", "gotimer"} {
		b.Run(name, func(b *testing.B) { benchBulkCPU(b, name) })
	}
}

func benchBulkCPU(b *testing.B, pacerName string) {
	args := []string{"-test.run=^TestBulkSink$", "-test.count=1", "-test.timeout=10m"}
	if p := os.Getenv(sinkProfileEnv); p != "" {
		args = append(args, "-test.cpuprofile="+p+"."+pacerName)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), sinkEnv+"="+pacerName)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	defer func() { // the child exits after its figures; one that does not is killed
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s := sc.Text(); strings.HasPrefix(s, "sink-") {
				lines <- s
			}
		}
		close(lines)
		cmd.Wait()
		close(exited)
	}()
	var addr string
	select {
	case l := <-lines:
		addr = strings.TrimPrefix(l, "sink-addr ")
	case <-time.After(30 * time.Second):
		b.Fatal("the receiving process did not start")
	}
	c, err := Dial("udp", addr, &Config{Pacer: pacerName})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	start, cpu0 := time.Now(), cputime.Process()
	for range b.N {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.CloseContext(context.Background()); err != nil {
		b.Fatal(err)
	}
	el, cpu := time.Since(start), cputime.Process()-cpu0
	b.StopTimer()
	st := c.Stats()
	var n, rcvCPU, rcvPkts int64
	select {
	case l, ok := <-lines:
		if !ok {
			b.Fatal("the receiving process ended without its figures")
		}
		fmt.Sscanf(l, "sink-result %d %d %d", &n, &rcvCPU, &rcvPkts)
	case <-time.After(30 * time.Second):
		b.Fatal("no figures from the receiving process")
	}
	if n != int64(b.N)*int64(len(chunk)) {
		b.Fatalf("the receiver read %d bytes, want %d", n, int64(b.N)*int64(len(chunk)))
	}
	b.ReportMetric(float64(n)*8/el.Seconds()/1e6, "Mbit/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(st.PktSent, 1)), "snd-ns/pkt")
	b.ReportMetric(float64(rcvCPU)/float64(max(rcvPkts, 1)), "rcv-ns/pkt")
	b.ReportMetric(100*float64(st.PktRetrans)/float64(max(st.PktSent, 1)), "retrans%")
}
