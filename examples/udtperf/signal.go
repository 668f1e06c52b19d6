package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// errInterrupted is the cause of a context cancelled by the first SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")

// exitInterrupted is the exit status after an interrupt: 128 + SIGINT, as shells report it.
const exitInterrupted = 130

// exitNow ends the process at a second interrupt (a variable for tests).
var exitNow = os.Exit

// interruptContext returns a context cancelled (cause errInterrupted) by the first SIGINT or
// SIGTERM, after which what notes says is printed on stderr; a second signal exits at once with
// status 130. stop releases the signals.
func interruptContext(stderr io.Writer, note string) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, unwatch := watchInterrupts(sigs, stderr, note)
	return ctx, func() {
		signal.Stop(sigs)
		unwatch()
	}
}

// watchInterrupts is interruptContext on a given signal channel.
func watchInterrupts(sigs <-chan os.Signal, stderr io.Writer, note string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-sigs:
		case <-quit:
			return
		}
		fmt.Fprintf(stderr, "udtperf: interrupted: %s (interrupt again to quit at once)\n", note)
		cancel(errInterrupted)
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "udtperf: interrupted again: quitting")
			exitNow(exitInterrupted)
		case <-quit:
		}
	}()
	return ctx, func() {
		close(quit)
		<-done
		cancel(nil)
	}
}

// interruptedError is a run cut short by an interrupt: exit status 130.
type interruptedError struct{ err error }

func (e interruptedError) Error() string { return e.err.Error() }
func (e interruptedError) Unwrap() error { return e.err }
