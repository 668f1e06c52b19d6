package pacer

import "time"

// The precision budget: how far from its scheduled time a departure may be (the tolerance), and
// how many packets may leave at once (the burst). Both are one rule for the whole stack: the
// Pacer, the Scheduler, and conn, which passes its Config's tolerance to both and sends each
// Release as one batch.

// DefaultTolerance is the tolerance a zero Config.Tolerance or SchedulerConfig.Tolerance means:
// a departure may leave up to 200 µs before or after its scheduled time.
//
// Why 200 µs (measured on the development VM, README "Precision at a CPU budget"): a futex wake-up
// there is 5–40 µs late at the median and 20–95 µs at the p99 for sleeps of 20–800 µs on a quiet
// host, so 200 µs covers the p99 of the millisecond sleeps of the lowest rates (10 Mbit/s of
// 1472-byte packets: 1.18 ms apart) with room for a busier host, and the default backend sleeps
// without spinning at every rate; a tolerance under that p99 leaves it spinning part of every
// wait. At 100 Mbit/s (118 µs apart) two to four packets then leave per wake instead of one. A
// burst is at most 200 µs of the rate early, well inside the 2 ms a late pacer may repay
// (BurstTime), so a bottleneck sees no more queue than catch-up already puts on it. Linux's fq
// qdisc applies the same idea with its timer_slack (10 µs by default), sized for a bare-metal
// hrtimer rather than a VM's wake-ups. A wider default was measured and not taken: 500 µs cut the
// hybrid's pacing CPU at 100 Mbit/s from 17 % to 9–10 % of a core, but its bursts (up to 1 ms of
// the rate) lowered the simulation grid's short paths with buffers under a BDP (100 Mbit/s · 2 ms:
// 51–73 % of the link down to 27–37 % with a 0.1-BDP buffer).
const DefaultTolerance = 200 * time.Microsecond

// Exact is the Tolerance of exact pacing: every packet leaves at its scheduled time, never
// before it, and Hybrid spins through its wake-up tail to be on time (the pacer's behaviour
// before tolerances). Any negative Tolerance means the same.
const Exact time.Duration = -1

// resolveTolerance maps a Config's Tolerance to the one in force: 0 means DefaultTolerance, a
// negative value none.
func resolveTolerance(t time.Duration) time.Duration {
	switch {
	case t == 0:
		return DefaultTolerance
	case t < 0:
		return 0
	}
	return t
}

// The burst rule.
const (
	// MaxBurst is the most packets one Release call sends (Config.Burst's default, and the cap of
	// a Scheduler's default burst): the 64 segments one UDP GSO send may carry (UDP_MAX_SEGMENTS,
	// Linux include/linux/udp.h), so that conn sends what one call releases as one batch.
	MaxBurst = 64

	// BurstTime and MinBurst size a paced flow's default burst (BurstFor), as quic-go's pacer
	// sizes its budget: 2 ms of the rate (its MinPacingDelay + TimerGranularity), at least 10
	// packets (maxBurstSizePackets). A late pacer (a preempted vCPU, a busy core) then repays at
	// most 2 ms of its rate at once: 64 packets at 100 Mbit/s would put 7.5 ms of queue on the
	// bottleneck, which delay-based controllers read as congestion and shallow buffers drop.
	BurstTime = 2 * time.Millisecond
	MinBurst  = 10
)

// BurstFor returns the default burst, in packets, of a flow paced at interval (the Scheduler's
// when SchedulerConfig.Burst is zero): the packets of BurstTime at that rate, at least MinBurst,
// at most MaxBurst; MaxBurst when unlimited (interval ≤ 0). It covers the packets a tolerance lets
// out in one wake as long as the tolerance is under BurstTime/2, as any sub-millisecond one is.
func BurstFor(interval time.Duration) int {
	if interval <= 0 {
		return MaxBurst
	}
	return min(max(int((BurstTime+interval-1)/interval), MinBurst), MaxBurst)
}
