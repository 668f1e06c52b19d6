package stream

import (
	"encoding/binary"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// Control packets are encoded and decoded with package packet into the Endpoint's scratch
// buffers and queued for conn (effects.go); data headers are written in place into the pacer's
// buffers. Nothing here allocates in steady state.

const ffSolo = 3 << 30 // FF = 11: the only packet of its message (spec §1.2)

var be = binary.BigEndian

// putDataHeader writes a data header into b[:16] (spec §1.2): seq, FF = 11 (solo), O = 0, msg.
func putDataHeader(b []byte, seq seqno.Seq, msg seqno.Msg, ts, dst uint32) {
	be.PutUint32(b[0:], uint32(seq&seqno.MaxSeq))
	be.PutUint32(b[4:], ffSolo|uint32(msg&seqno.MaxMsg))
	be.PutUint32(b[8:], ts)
	be.PutUint32(b[12:], dst)
}

// ctrlHeader is the header of every control packet we send.
func (e *Endpoint) ctrlHeader(t time.Duration) packet.ControlHeader {
	return packet.ControlHeader{Timestamp: timestamp(t), DstSocketID: e.cfg.PeerID}
}

// emit queues an encoded control packet for conn (PopControl).
func (e *Endpoint) emit(t time.Duration, b []byte, err error) {
	if err != nil { // our own encoding: cannot happen with the values we build
		e.stats.EncodeErrors++
		return
	}
	if !e.ctrlq.push(b) {
		e.stats.CtrlQueueDrops++
		return
	}
	e.lastSend = t
	e.stats.CtrlSent++
}

func (e *Endpoint) sendKeepAlive(t time.Duration) {
	p := packet.KeepAlive{ControlHeader: e.ctrlHeader(t)}
	b, err := p.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
	e.stats.KeepAliveSent++
}

func (e *Endpoint) sendShutdown(t time.Duration) {
	p := packet.Shutdown{ControlHeader: e.ctrlHeader(t)}
	b, err := p.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
}

func (e *Endpoint) sendACK2(t time.Duration, ackSeq uint32) {
	p := packet.ACK2{ControlHeader: e.ctrlHeader(t), AckSeq: ackSeq}
	b, err := p.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
	e.stats.ACK2Sent++
}

func (e *Endpoint) sendACKPacket(t time.Duration, a *packet.ACK) {
	a.ControlHeader = e.ctrlHeader(t)
	b, err := a.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
}

// sendNAK sends the ranges in e.nak.Ranges.
func (e *Endpoint) sendNAK(t time.Duration) {
	e.nak.ControlHeader = e.ctrlHeader(t)
	b, err := e.nak.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
	e.stats.NAKSent++
}
