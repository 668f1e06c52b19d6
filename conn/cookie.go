package conn

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"hash"
	"net/netip"
	"sync"
	"time"
)

// cookiePeriod is the lifetime of one cookie bucket. A cookie from the current or the previous
// bucket is accepted, so a cookie lives between one and two periods. UDT 4.11 uses one minute
// (spec §8.1).
const cookiePeriod = time.Minute

// cookieJar makes and checks SYN cookies (spec §3.2 step 2, §8). Unlike UDT 4.11's unkeyed
// MD5("host:port:minute") — forgeable for any spoofed source once one genuine cookie is seen, and
// with a broken previous-minute fallback (§8.3) — the cookie here is a truncated
// HMAC-SHA256 under a random per-listener key over the source address, port and time bucket, and
// the previous bucket is really accepted. It keeps no per-request state.
type cookieJar struct {
	start time.Time // bucket 0 begins here (monotonic)
	mu    sync.Mutex
	mac   hash.Hash
	buf   [16 + 2 + 8]byte
	sum   []byte
}

func newCookieJar(now time.Time) *cookieJar {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand, Go ≥ 1.24)
	return &cookieJar{start: now, mac: hmac.New(sha256.New, key), sum: make([]byte, 0, sha256.Size)}
}

func (j *cookieJar) bucket(now time.Time) uint64 {
	d := now.Sub(j.start)
	if d < 0 {
		d = 0
	}
	return uint64(d / cookiePeriod)
}

func (j *cookieJar) compute(addr netip.AddrPort, bucket uint64) uint32 {
	j.mu.Lock()
	defer j.mu.Unlock()
	a := addr.Addr().As16()
	copy(j.buf[:16], a[:])
	binary.BigEndian.PutUint16(j.buf[16:], addr.Port())
	binary.BigEndian.PutUint64(j.buf[18:], bucket)
	j.mac.Reset()
	j.mac.Write(j.buf[:])
	j.sum = j.mac.Sum(j.sum[:0])
	return binary.BigEndian.Uint32(j.sum)
}

// make returns the cookie for a request from addr at now.
func (j *cookieJar) make(addr netip.AddrPort, now time.Time) uint32 {
	return j.compute(addr, j.bucket(now))
}

// valid reports whether c is the cookie of addr for the current or the previous bucket.
func (j *cookieJar) valid(addr netip.AddrPort, c uint32, now time.Time) bool {
	b := j.bucket(now)
	if subtle.ConstantTimeEq(int32(j.compute(addr, b)), int32(c)) == 1 {
		return true
	}
	return b > 0 && subtle.ConstantTimeEq(int32(j.compute(addr, b-1)), int32(c)) == 1
}

// expiry returns when the last cookie valid at now stops being valid: the end of the bucket after
// now's (a cookie made in bucket b is accepted during b and b+1).
func (j *cookieJar) expiry(now time.Time) time.Time {
	return j.start.Add(time.Duration(j.bucket(now)+2) * cookiePeriod)
}
