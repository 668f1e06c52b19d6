package main

import "time"

// matrixOptions are the -matrix flags.
type matrixOptions struct {
	run       bool
	quick     bool
	json      bool
	plot      string
	duration  time.Duration
	protocols string
	udtperf   string
}
