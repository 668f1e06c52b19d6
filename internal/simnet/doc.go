// Package simnet is an in-memory packet network for tests: net.PacketConn endpoints with UDP
// addresses, connected by configurable one-way links that delay, rate-limit, queue, lose,
// reorder, duplicate and filter datagrams.
//
// It is built for testing/synctest: it uses only time.AfterFunc timers, mutexes that are never
// held across a wait, and channels. It starts no goroutines of its own (timer callbacks run
// briefly and return), opens no sockets and never spins, so a test bubble's virtual clock makes
// every delivery time exact and every run reproducible. Create the Network inside the bubble
// that uses it: timers and channels belong to the bubble that created them.
//
// # Model
//
// A Network holds endpoints (*Conn), each bound to an IP:port, and routes. A route maps a
// (source prefix, destination prefix) pair to a path: an ordered list of *Link. A datagram
// written to an address walks its path link by link and is then appended to the destination's
// receive queue. Without a route it is delivered at once and unimpaired. Addresses must be in
// 198.18.0.0/15 (RFC 2544 benchmarking range) or loopback, so nothing here can be mistaken for
// a real host.
//
// Each Link is one direction of one hop and applies, in this order (the first stage that drops
// a packet ends its walk):
//
//  1. down: a link set down (SetDown) drops everything: the peer goes silent.
//  2. MTU: packets longer than LinkConfig.MTU bytes are dropped, unless written with
//     WriteFragmentable; LinkConfig.MTUAction may also report it to the writer (icmp.go).
//  3. rule: LinkConfig.Drop, a predicate over the datagram bytes (for example DropUDTControl).
//  4. loss: the "drop N every M" pattern, the Gilbert–Elliott burst channel, then the independent
//     random loss probability.
//  5. queue: with a Rate, packets are serialised one after another at Rate bit/s
//     ((len+Overhead)·8/Rate seconds each) behind a drop-tail FIFO limited in bytes and/or
//     packets; a packet that does not fit is dropped. With BucketBytes the Rate is a token-bucket
//     shaper instead (Linux tbf).
//  6. release: with ReleaseEvery, packets are held until the next multiple of ReleaseEvery on
//     the clock and leave together, as from a relay on a coarse timer (or, on a return path,
//     a hop that aggregates ACKs).
//  7. propagation: Delay plus a uniform jitter in [0, Jitter], drawn per packet or, with
//     JitterHold, per slot of the clock; without JitterReorders arrivals are kept in order.
//     With probability Reorder a packet is held back ReorderDelay more and overtaken by its
//     successors. With probability Duplicate a second copy arrives too.
//
// All randomness comes from a math/rand/v2 PCG source seeded from the Network's seed and the
// link's creation index, so a run is reproducible as long as the writes happen in the same
// order.
package simnet
