package main

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// prefixWriter returns a writer that starts every line written to w with
// prefix, so output of processes on different hosts stays distinguishable.
// It is safe for concurrent use.
func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &linePrefixer{w: w, prefix: []byte(prefix), bol: true}
}

type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	bol    bool // at the beginning of a line
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, c := range b {
		if p.bol {
			out.Write(p.prefix)
			p.bol = false
		}
		out.WriteByte(c)
		if c == '\n' {
			p.bol = true
		}
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func timeAfter(d time.Duration) <-chan time.Time { return time.After(d) }
