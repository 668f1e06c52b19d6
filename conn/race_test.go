//go:build race

package conn

// raceEnabled: the race detector slows every goroutine several times, so real-time ratios
// (through udprelay on loopback) measure it rather than the protocol.
const raceEnabled = true
