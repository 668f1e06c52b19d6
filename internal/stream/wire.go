package stream

import "encoding/binary"

// Wire layout helpers (spec §1–2). The engine encodes its few packet shapes in place, straight into
// the caller's buffers, so the hot path allocates nothing and needs no intermediate values.

// Control packet types (spec §2).
const (
	ctrlHandshake  = 0
	ctrlKeepAlive  = 1
	ctrlACK        = 2
	ctrlNAK        = 3
	ctrlCongestion = 4
	ctrlShutdown   = 5
	ctrlACK2       = 6
	ctrlDropReq    = 7
	ctrlError      = 8
	ctrlUser       = 0x7FFF
)

const (
	flagControl = 1 << 31
	ffSolo      = 3 << 30 // FF = 11: the only packet of its message
	msgMask     = 0x1FFFFFFF
	nakRangeBit = 1 << 31
)

var be = binary.BigEndian

// putDataHeader writes a data header into b[:16] (spec §1.2).
func putDataHeader(b []byte, seq, msg, ts, dst uint32) {
	be.PutUint32(b[0:], seq&maxSeq)
	be.PutUint32(b[4:], ffSolo|msg&msgMask)
	be.PutUint32(b[8:], ts)
	be.PutUint32(b[12:], dst)
}

// putCtrlHeader writes a control header into b[:16] (spec §1.3).
func putCtrlHeader(b []byte, typ, info, ts, dst uint32) {
	be.PutUint32(b[0:], flagControl|(typ&0x7FFF)<<16)
	be.PutUint32(b[4:], info)
	be.PutUint32(b[8:], ts)
	be.PutUint32(b[12:], dst)
}
