package main

// `udtperf plot TRACE [-o out.png] [-bin D]`: draws a trace written by -trace (package
// conn/trace's JSON lines) as four panels over time: rates (sent, pacing, delivered or
// received; the delivery-rate samples a delivery-based controller got), RTT, windows
// (congestion window, flow window, packets in flight) and losses
// (packets lost, retransmitted, gaps detected, retransmission timeouts).

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/udtgo/udt/conn/trace"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type plotOptions struct {
	in, out string
	bin     time.Duration // 0: automatic
}

const plotUsage = `udtperf plot TRACE [-o FILE] [-bin DURATION]

Draws a trace written by "udtperf client -trace TRACE": sending, pacing and delivery rates,
RTT, congestion and flow windows, packets in flight, and losses over time. The output's
format follows its extension (png, svg, pdf, eps); default: TRACE with .png.`

func parsePlot(args []string, stderr io.Writer) (*plotOptions, error) {
	o := &plotOptions{}
	fs := newFlagSet("udtperf plot", plotUsage, stderr)
	fs.StringVar(&o.out, "o", "", "output file (default: TRACE with the extension .png)")
	fs.DurationVar(&o.bin, "bin", 0, "time per rate and loss sample (default: about 1/400 of the trace, at least 10ms)")
	for { // the trace file may come before or after the flags
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, errHelp) {
				fs.usage()
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		if o.in != "" {
			return nil, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
		}
		o.in, args = fs.Arg(0), fs.Args()[1:]
	}
	if o.in == "" {
		return nil, usageError{errors.New("plot needs a trace file (udtperf plot TRACE -o out.png)")}
	}
	if o.out == "" {
		o.out = strings.TrimSuffix(o.in, filepath.Ext(o.in)) + ".png"
	}
	if o.bin < 0 || (o.bin > 0 && o.bin < time.Millisecond) {
		return nil, usageError{fmt.Errorf("-bin %v: want at least 1ms", o.bin)}
	}
	switch ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(o.out), ".")); ext {
	case "png", "svg", "pdf", "eps", "jpg", "jpeg", "tif", "tiff":
	default:
		return nil, usageError{fmt.Errorf("-o %s: want a .png, .svg, .pdf or .eps file", o.out)}
	}
	return o, nil
}

func runPlot(o *plotOptions, stdout, stderr io.Writer) error {
	f, err := os.Open(o.in)
	if err != nil {
		return fmt.Errorf("cannot read trace: %v", err)
	}
	defer f.Close()
	tl, err := readTimeline(f, o.bin)
	if err != nil {
		return err
	}
	if err := tl.draw(o.out); err != nil {
		return fmt.Errorf("cannot write %s: %v", o.out, err)
	}
	fmt.Fprintf(stderr, "udtperf: plotted %d events over %.1f s (%v per sample) to %s\n", tl.events, tl.span.Seconds(), tl.bin, o.out)
	return nil
}

// timeline is a trace binned for plotting.
type timeline struct {
	info    trace.ConnInfo
	bin     time.Duration
	span    time.Duration
	events  int
	payload int // bytes per full packet (MSS − 44)

	// per bin: bytes sent (first transmissions and retransmissions), delivered (acknowledged,
	// from ACK numbers), received; packets lost, retransmitted, detected missing
	sent, delivered, recv          []float64
	srtt                           []time.Duration // per bin: the last smoothed RTT known (0: none yet)
	lost, retrans, detected        []float64
	pacing, rtt, cwnd, fwnd, fly   plotter.XYs
	samples                        plotter.XYs // delivery-rate samples given to the controller, Mbit/s
	timeouts                       []float64   // times, s
	sender                         bool
	hasRTT, hasCwnd, hasWindowInfo bool
}

// readTimeline reads a trace and bins it by bin (0: chosen from the trace's length).
func readTimeline(r io.Reader, bin time.Duration) (*timeline, error) {
	rd, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	var evs []trace.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return nil, errors.New("the trace holds no events")
	}
	tl := &timeline{info: rd.Info(), events: len(evs), payload: max(rd.Info().MSS-44, 1)}
	start := tl.info.Start
	for _, ev := range evs {
		tl.span = max(tl.span, ev.Time.Sub(start))
	}
	tl.bin = bin
	if tl.bin == 0 {
		tl.bin = niceBin(tl.span / 400)
	}
	n := int(tl.span/tl.bin) + 1
	for _, s := range []*[]float64{&tl.sent, &tl.delivered, &tl.recv, &tl.lost, &tl.retrans, &tl.detected} {
		*s = make([]float64, n)
	}
	tl.srtt = make([]time.Duration, n)
	var lastAck uint32
	haveAck := false
	for _, ev := range evs {
		t := ev.Time.Sub(start)
		if t < 0 {
			continue
		}
		i, sec := int(t/tl.bin), t.Seconds()
		switch ev.Kind {
		case trace.PacketSent:
			tl.sent[i] += float64(ev.Bytes)
			tl.sender = true
		case trace.PacketRetransmitted:
			tl.sent[i] += float64(ev.Bytes)
			tl.retrans[i]++
			tl.sender = true
		case trace.PacketReceived:
			tl.recv[i] += float64(ev.Bytes)
		case trace.PacketsLost:
			tl.lost[i] += float64(ev.Packets)
		case trace.LossDetected:
			tl.detected[i] += float64(ev.Packets)
		case trace.Timeout:
			if ev.Detail == "timeout" {
				tl.timeouts = append(tl.timeouts, sec)
			}
		case trace.ACKReceived:
			if haveAck {
				if d := (ev.Seq - lastAck) & (1<<31 - 1); d < 1<<30 {
					tl.delivered[i] += float64(d) * float64(tl.payload)
				}
			}
			lastAck, haveAck = ev.Seq, true
			if ev.RTT > 0 {
				tl.rtt = append(tl.rtt, plotter.XY{X: sec, Y: float64(ev.RTT) / 1e6})
				tl.hasRTT = true
				tl.srtt[i] = ev.RTT
			}
			tl.fwnd = append(tl.fwnd, plotter.XY{X: sec, Y: float64(ev.FlowWindow)})
			tl.fly = append(tl.fly, plotter.XY{X: sec, Y: float64(ev.InFlight)})
			tl.hasWindowInfo = true
		case trace.RTTUpdated:
			if !tl.sender {
				tl.rtt = append(tl.rtt, plotter.XY{X: sec, Y: float64(ev.RTT) / 1e6})
				tl.hasRTT = true
			}
		case trace.DeliveryRate:
			if ev.Interval > 0 {
				tl.samples = append(tl.samples, plotter.XY{X: sec, Y: float64(ev.Bytes) * 8 / ev.Interval.Seconds() / 1e6})
			}
		case trace.CongestionState:
			rate := 0.0 // unpaced
			if ev.Period > 0 {
				rate = float64(tl.payload) * 8 / ev.Period.Seconds() / 1e6
			}
			tl.pacing = append(tl.pacing, plotter.XY{X: sec, Y: rate})
			tl.cwnd = append(tl.cwnd, plotter.XY{X: sec, Y: float64(ev.CWnd)})
			tl.hasCwnd = tl.hasCwnd || ev.CWnd > 0
		}
	}
	return tl, nil
}

// niceBin rounds d up to 1, 2 or 5 × a power of ten, at least 10 ms.
func niceBin(d time.Duration) time.Duration {
	for b := 10 * time.Millisecond; ; b *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if b*m >= d {
				return b * m
			}
		}
	}
}

// deliveryXY is the delivery rate at each bin's end over the last four smoothed RTTs (at least
// one bin): the bytes newly acknowledged in that window over its length. A cumulative ACK moves
// only when the first missing packet arrives, so a loss holds it for about a round trip (the
// NAK and the retransmission), after which one ACK acknowledges that round trip's data at
// once: over four RTTs, one repaired loss shifts at most a quarter of the window's bytes. (A
// delivery-based controller's own samples, which read NAKs as SACKs, are the points.)
func (tl *timeline) deliveryXY() plotter.XYs {
	xy := make(plotter.XYs, len(tl.delivered))
	var rtt time.Duration
	for i := range tl.delivered {
		if tl.srtt[i] > 0 {
			rtt = tl.srtt[i]
		}
		k := max(int((4*rtt+tl.bin-1)/tl.bin), 1) // bins in the window
		sum := 0.0
		for j := max(i-k+1, 0); j <= i; j++ {
			sum += tl.delivered[j]
		}
		w := float64(min(k, i+1)) * tl.bin.Seconds()
		xy[i] = plotter.XY{X: float64(i+1) * tl.bin.Seconds(), Y: sum * 8 / w / 1e6}
	}
	return xy
}

// quantile is the q-quantile of the Y values of the given series (0 if none).
func quantile(q float64, series ...plotter.XYs) float64 {
	var ys []float64
	for _, s := range series {
		for _, p := range s {
			ys = append(ys, p.Y)
		}
	}
	if len(ys) == 0 {
		return 0
	}
	slices.Sort(ys)
	return ys[min(int(q*float64(len(ys))), len(ys)-1)]
}

// rateXY turns per-bin bytes into Mbit/s at each bin's middle.
func (tl *timeline) rateXY(bytes []float64) plotter.XYs {
	xy := make(plotter.XYs, len(bytes))
	for i, b := range bytes {
		xy[i] = plotter.XY{X: (float64(i) + 0.5) * tl.bin.Seconds(), Y: b * 8 / tl.bin.Seconds() / 1e6}
	}
	return xy
}

func (tl *timeline) countXY(c []float64) plotter.XYs {
	xy := make(plotter.XYs, len(c))
	for i, v := range c {
		xy[i] = plotter.XY{X: (float64(i) + 0.5) * tl.bin.Seconds(), Y: v}
	}
	return xy
}

// stepped makes a step line of samples that hold until the next one (controller decisions).
func stepped(xy plotter.XYs, end float64) plotter.XYs {
	if len(xy) == 0 {
		return xy
	}
	out := make(plotter.XYs, 0, 2*len(xy)+1)
	for i, p := range xy {
		if i > 0 {
			out = append(out, plotter.XY{X: p.X, Y: xy[i-1].Y})
		}
		out = append(out, p)
	}
	return append(out, plotter.XY{X: end, Y: xy[len(xy)-1].Y})
}

// thin keeps at most n points of xy (every k-th), so long traces draw quickly.
func thin(xy plotter.XYs, n int) plotter.XYs {
	if len(xy) <= n {
		return xy
	}
	k := (len(xy) + n - 1) / n
	out := make(plotter.XYs, 0, n+1)
	for i := 0; i < len(xy); i += k {
		out = append(out, xy[i])
	}
	return out
}

// draw writes the four panels to file.
func (tl *timeline) draw(file string) error {
	end := tl.span.Seconds()
	role := "receiver"
	if tl.sender {
		role = "sender"
	}
	panel := func(title, ylabel string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.X.Label.Text = "time, s"
		p.X.Min, p.X.Max = 0, end
		p.Legend.Top, p.Legend.Left = true, false
		p.Add(plotter.NewGrid())
		return p
	}
	type line struct {
		name string
		xy   plotter.XYs
	}
	add := func(p *plot.Plot, lines ...line) error {
		for i, l := range lines {
			if len(l.xy) == 0 {
				continue
			}
			ln, err := plotter.NewLine(thin(l.xy, 4000))
			if err != nil {
				return err
			}
			ln.Color = plotutil.Color(i)
			ln.Width = vg.Points(1)
			p.Add(ln)
			p.Legend.Add(l.name, ln)
		}
		return nil
	}
	title := fmt.Sprintf("udt %s %s → %s, MSS %d, %s", role, addrOf(tl.info.Local), addrOf(tl.info.Remote), tl.info.MSS, tl.info.Congestion)

	rates := panel(title+"\nrates ("+tl.bin.String()+" samples)", "Mbit/s")
	var rl []line
	if tl.sender {
		rl = []line{{"sent", tl.rateXY(tl.sent)}, {"pacing rate", stepped(tl.pacing, end)},
			{"delivered (cumulative ACKs, over 4 RTTs)", tl.deliveryXY()}}
	} else {
		rl = []line{{"received", tl.rateXY(tl.recv)}}
	}
	if err := add(rates, rl...); err != nil {
		return err
	}
	if len(tl.samples) > 0 {
		sc, err := plotter.NewScatter(thin(tl.samples, 4000))
		if err != nil {
			return err
		}
		sc.Color = color.Gray{Y: 100}
		sc.Radius = vg.Points(0.8)
		sc.Shape = draw.CircleGlyph{}
		rates.Add(sc)
		rates.Legend.Add("delivery-rate samples (controller)", sc)
	}
	rates.Y.Min = 0
	// The scale follows the bulk of the rates measured: slow start's pacing (a period of 1 µs:
	// Gbit/s) and a burst after a stall would flatten everything else (the lines are clipped).
	rates.Y.Max = 1.25 * max(quantile(0.98, tl.rateXY(tl.sent), tl.rateXY(tl.recv), tl.deliveryXY()), 1)

	rtt := panel("round-trip time (smoothed)", "ms")
	// RTT, windows: the sender's state as the last ACK left it (a step until the next).
	if err := add(rtt, line{"RTT", stepped(tl.rtt, end)}); err != nil {
		return err
	}
	rtt.Y.Min = 0

	win := panel("windows", "packets")
	wl := []line{{"flow window (peer)", stepped(tl.fwnd, end)}, {"in flight (at ACKs)", stepped(tl.fly, end)}}
	if tl.hasCwnd {
		wl = append([]line{{"congestion window", stepped(tl.cwnd, end)}}, wl...)
	}
	if err := add(win, wl...); err != nil {
		return err
	}
	win.Y.Min = 0

	loss := panel("losses (packets per sample)", "packets")
	var ll []line
	if tl.sender {
		ll = []line{{"reported lost", tl.countXY(tl.lost)}, {"retransmitted", tl.countXY(tl.retrans)}}
	} else {
		ll = []line{{"detected missing", tl.countXY(tl.detected)}}
	}
	if err := add(loss, ll...); err != nil {
		return err
	}
	if len(tl.timeouts) > 0 {
		pts := make(plotter.XYs, len(tl.timeouts))
		for i, x := range tl.timeouts {
			pts[i] = plotter.XY{X: x, Y: 0}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = color.RGBA{R: 200, A: 255}
		sc.Shape = draw.TriangleGlyph{}
		loss.Add(sc)
		loss.Legend.Add("retransmission timeout", sc)
	}
	loss.Y.Min = 0

	plots := [][]*plot.Plot{{rates}, {rtt}, {win}, {loss}}
	const w, h = 10 * vg.Inch, 11 * vg.Inch
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(file), "."))
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 4, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}
	for i, row := range plot.Align(plots, tiles, dc) {
		plots[i][0].Draw(row[0])
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func addrOf(a interface{ String() string }) string {
	if a == nil || a.String() == "" {
		return "?"
	}
	return a.String()
}
