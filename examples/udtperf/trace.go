package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/udtgo/udt/conn/trace"
)

// traceFile is client -trace FILE: the JSON lines trace of the transfer's udt connection. The
// file is created before connecting, so that a bad path fails at once.
type traceFile struct {
	mu sync.Mutex
	f  *os.File
	w  *trace.JSONWriter // nil until the connection is established
}

func createTrace(path string) (*traceFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cannot create the -trace file: %v", err)
	}
	return &traceFile{f: f}, nil
}

// tracer is Config.Tracer: the first connection writes to the file, any other is not traced.
func (t *traceFile) tracer(info trace.ConnInfo) trace.Tracer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil || t.f == nil {
		return nil
	}
	t.w = trace.NewJSONWriter(t.f, info)
	return t.w
}

func (t *traceFile) used() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w != nil
}

// close flushes and closes the file; call it once the connection is closed (conn.Conn.Close
// returns after the last event was delivered).
func (t *traceFile) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.f
	t.f = nil
	if t.w != nil {
		return t.w.Close() // closes f
	}
	if f != nil {
		return f.Close()
	}
	return nil
}
