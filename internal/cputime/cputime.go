// Package cputime reads the CPU time the whole process has used, for benchmarks that report CPU
// per operation next to wall time: on a shared, loaded machine the former is far less disturbed
// by other processes.
package cputime
