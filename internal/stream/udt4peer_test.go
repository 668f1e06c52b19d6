package stream

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// A UDT 4.9+ receiver reports each loss once (no periodic NAK, spec §4.4/§4.5). When both the
// original and the NAK-triggered retransmission of a run of packets are lost, the sender must
// recover the run in a few retransmission timeouts (UDT4 re-queues everything unacknowledged,
// go-back-N), not one packet per timer expiry.
func TestUDT4ReceiverLostRetransmissions(t *testing.T) {
	const isn = 1000
	sent := map[uint32]int{}
	dropData := func(b []byte) bool {
		if len(b) < 16 || b[0]&0x80 != 0 {
			return false
		}
		seq := binary.BigEndian.Uint32(b)
		off := seq - isn
		if off >= 2000 && off < 2400 && sent[seq] < 2 {
			sent[seq]++
			return true
		}
		return false
	}
	reported := map[uint32]bool{}
	onceNAK := func(b []byte) bool { // the receiver NAKs each loss once, as UDT 4.11 does
		if t, err := packet.Type(b); err != nil || t != packet.TypeNAK {
			return false
		}
		var seqs []uint32
		for body := b[16:]; len(body) >= 4; body = body[4:] {
			w := binary.BigEndian.Uint32(body)
			if w&0x80000000 != 0 && len(body) >= 8 {
				last := binary.BigEndian.Uint32(body[4:])
				for s := w & 0x7fffffff; s <= last; s++ {
					seqs = append(seqs, s)
				}
				body = body[4:]
			} else {
				seqs = append(seqs, w)
			}
		}
		for _, s := range seqs {
			if reported[s] {
				return true // a re-report: UDT 4.11 never sends one
			}
		}
		for _, s := range seqs {
			reported[s] = true
		}
		return false
	}
	l := newLink(21, linkRules{delay: time.Millisecond, drop: dropData}, linkRules{delay: time.Millisecond, drop: onceNAK})
	newPair(l, pairOpts{isnA: isn, isnB: isn, ccA: &fixedCC{period: 10 * time.Microsecond, window: 8192}})
	transfer(t, l, 8<<20, false, 3*time.Second)
}
