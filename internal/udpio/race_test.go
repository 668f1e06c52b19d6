//go:build race

package udpio

const raceEnabled = true
