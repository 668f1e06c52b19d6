package conn

import (
	"io"
	"testing"
	"time"
)

func TestTmpPingPong(t *testing.T) {
	c, s, ln := loopbackPair(t, nil)
	defer ln.Close()
	defer c.Close()
	defer s.Close()
	go func() {
		buf := make([]byte, 100)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			s.Write(buf)
		}
	}()
	req, resp := make([]byte, 100), make([]byte, 100)
	var lat []time.Duration
	for i := 0; i < 30; i++ {
		st := time.Now()
		c.Write(req)
		io.ReadFull(c, resp)
		lat = append(lat, time.Since(st))
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%v", lat)
	t.Logf("%+v", c.Stats())
}
