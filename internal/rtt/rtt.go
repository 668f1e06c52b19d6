// Package rtt measures round-trip time the UDT way: the receiver numbers its
// full and medium ACKs, remembers when each left ([History]), and takes an RTT
// sample when the sender's ACK2 echoes the number back (spec §2.3, §2.5,
// §4.2); both ends smooth their samples with [Estimator].
//
// These are pure data structures: time is passed in, nothing allocates after
// construction, and they are not safe for concurrent use.
package rtt

import "time"

const (
	// InitialRTT is the RTT before any sample: 10·SYN = 100 ms (spec §4.2).
	InitialRTT = 100 * time.Millisecond
	// InitialRTTVar is the RTT variance before any sample: 50 ms (spec §4.2).
	InitialRTTVar = 50 * time.Millisecond
	// MaxSample bounds one sample; larger ones (from a hostile or broken
	// peer's ACK RTT field) are clamped to it so they cannot overflow or
	// stall timers forever.
	MaxSample = time.Minute
)

// Estimator smooths RTT samples exactly as UDT 4.11 (CUDT::processCtrl, ACK
// and ACK2; spec §2.5), in integer microseconds and in this order:
//
//	RTTVar = (3·RTTVar + |sample − RTT|) / 4   (using the previous RTT)
//	RTT    = (7·RTT + sample) / 8
//
// The zero value is ready to use and starts at InitialRTT/InitialRTTVar.
type Estimator struct {
	rtt, rttVar int64 // µs
	ok          bool  // initialised
	measured    bool  // a sample or Set has replaced the initial values
}

func (e *Estimator) init() {
	if !e.ok {
		e.rtt, e.rttVar, e.ok = InitialRTT.Microseconds(), InitialRTTVar.Microseconds(), true
	}
}

// Update folds in one sample, truncated to whole µs. Negative samples are
// ignored (they can only come from misuse); samples above MaxSample are
// clamped to it.
func (e *Estimator) Update(sample time.Duration) {
	if sample < 0 {
		return
	}
	e.UpdateMicros(uint32(min(sample, MaxSample).Microseconds()))
}

// UpdateMicros folds in a sample given in µs, e.g. the RTT field (word 1) of
// a full or medium ACK, which the sender takes as its own sample (spec
// §4.2). Values above MaxSample are clamped to it.
func (e *Estimator) UpdateMicros(sampleUs uint32) {
	e.init()
	e.measured = true
	s := min(int64(sampleUs), MaxSample.Microseconds())
	d := s - e.rtt
	if d < 0 {
		d = -d
	}
	e.rttVar = (3*e.rttVar + d) >> 2
	e.rtt = (7*e.rtt + s) >> 3
}

// Set replaces the estimate with rtt and rttVar (truncated to whole µs;
// negative values count as 0, values above MaxSample are clamped to it).
// RFC 6298 §2.2 starts from the first measurement R with RTT = R,
// RTTVar = R/2 instead of smoothing R into the initial guess: a caller that
// wants that does
//
//	if !e.Measured() { e.Set(r, r/2) } else { e.Update(r) }
func (e *Estimator) Set(rtt, rttVar time.Duration) {
	clamp := func(d time.Duration) int64 { return max(min(d, MaxSample), 0).Microseconds() }
	e.rtt, e.rttVar, e.ok, e.measured = clamp(rtt), clamp(rttVar), true, true
}

// Measured reports whether the estimate comes from at least one sample (or
// Set) rather than the initial InitialRTT/InitialRTTVar.
func (e *Estimator) Measured() bool { return e.measured }

// RTT returns the smoothed round-trip time.
func (e *Estimator) RTT() time.Duration { e.init(); return time.Duration(e.rtt) * time.Microsecond }

// RTTVar returns the smoothed RTT variance (mean deviation).
func (e *Estimator) RTTVar() time.Duration {
	e.init()
	return time.Duration(e.rttVar) * time.Microsecond
}

// RTTMicros returns the smoothed RTT in µs for ACK word 1.
func (e *Estimator) RTTMicros() uint32 { e.init(); return uint32(e.rtt) }

// RTTVarMicros returns the RTT variance in µs for ACK word 2.
func (e *Estimator) RTTVarMicros() uint32 { e.init(); return uint32(e.rttVar) }

// Timeout returns RTT + 4·RTTVar, the quantity UDT 4.11 uses in the EXP
// timer, in ACK suppression and in its NAK interval (spec §2.3, §4.1, §4.5).
func (e *Estimator) Timeout() time.Duration { return e.RTT() + 4*e.RTTVar() }
