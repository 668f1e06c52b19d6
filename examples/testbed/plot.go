package main

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writePlot draws goodput per scenario as grouped bars, one colour per
// protocol, and saves it as PNG (or any format gonum/plot infers from the
// file name's extension).
func writePlot(file string, rows []Row) error {
	type key struct{ rtt, loss, rate float64 }
	var keys []key
	var protos []string
	for _, r := range rows {
		k := key{r.RTTms, r.LossPct, r.RateMbps}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		if !slices.Contains(protos, r.Protocol) {
			protos = append(protos, r.Protocol)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("plot: no results")
	}
	p := plot.New()
	p.Title.Text = "goodput per scenario (tbf rate, nftables loss, TUN delay line)"
	p.Y.Label.Text = "goodput, Mbit/s"
	p.Y.Min = 0
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = fmt.Sprintf("%gM %gms %g%%", k.rate, k.rtt, k.loss)
	}
	width := vg.Points(min(14, 60/float64(len(protos))))
	for pi, proto := range protos {
		vals := make(plotter.Values, len(keys))
		for i, k := range keys {
			for _, r := range rows {
				if r.Protocol == proto && (key{r.RTTms, r.LossPct, r.RateMbps}) == k && r.Error == "" {
					vals[i] = r.GoodputMbps
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(pi)
		bars.Offset = width * vg.Length(float64(pi)-float64(len(protos)-1)/2)
		p.Add(bars)
		p.Legend.Add(proto, bars)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	// Room at the sides for the outer bars and at the top for the legend.
	p.X.Min, p.X.Max = -0.6, float64(len(keys))-0.4
	var top float64
	for _, r := range rows {
		top = max(top, r.RateMbps, r.GoodputMbps)
	}
	p.Y.Max = 1.25 * top
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = -0.9
	return p.Save(vg.Length(max(8, 1.4*float64(len(keys))))*vg.Inch, 5*vg.Inch, file)
}
