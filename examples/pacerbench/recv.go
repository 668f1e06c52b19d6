package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/udtgo/udt/internal/udpio"
)

// The receiver of rate mode runs in a child process (this binary again, with receiverEnv set),
// so that the sender's process CPU is the pacing alone: the pacer goroutine, its waiter's
// threads and the Go runtime, with no receive path in it. The child prints its UDP port, counts
// what arrives until its stdin closes, then prints "BYTES CPU_NS" (its CPU from ready to end) and
// exits.
const receiverEnv = "PACERBENCH_RECEIVER"

// receiverMain is the child's main; it returns the exit status.
func receiverMain() int {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pacerbench receiver:", err)
		return 1
	}
	_ = conn.SetReadBuffer(8 << 20) // best effort; capped by net.core.rmem_max
	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		bc := udpio.New(conn) // GRO and recvmmsg where available: the receiver costs little
		msgs := make([]udpio.Message, 64)
		for i := range msgs {
			msgs[i].Buf = make([]byte, datagram+1)
		}
		for {
			n, err := bc.ReadBatch(msgs)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			for _, m := range msgs[:n] {
				got.Add(int64(m.N))
			}
		}
	}()
	cpu0 := cpuTime()
	fmt.Println(conn.LocalAddr().(*net.UDPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes our stdin
	time.Sleep(20 * time.Millisecond)    // let the last datagrams land
	cpu := cpuTime() - cpu0
	conn.Close()
	<-done
	fmt.Println(got.Load(), int64(cpu))
	return 0
}

// child is a running receiver process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	port  int
}

// startReceiver starts the receiver child and reads its port.
func startReceiver() (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), receiverEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := c.out.ReadString('\n')
	if err == nil {
		c.port, err = strconv.Atoi(strings.TrimSpace(line))
	}
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, fmt.Errorf("receiver did not start: %v", err)
	}
	return c, nil
}

// stop ends the child and returns the bytes it received and the CPU it used meanwhile.
func (c *child) stop() (bytes int64, cpu time.Duration, err error) {
	c.stdin.Close()
	line, rerr := c.out.ReadString('\n')
	werr := c.cmd.Wait()
	var ns int64
	if _, err := fmt.Sscan(line, &bytes, &ns); err != nil {
		return 0, 0, fmt.Errorf("receiver: bad report %q (%v, %v)", line, rerr, werr)
	}
	return bytes, time.Duration(ns), werr
}
