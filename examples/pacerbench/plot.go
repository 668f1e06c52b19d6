package main

import (
	"fmt"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// histograms collects samples per backend (row) and series (column) for one PNG of histograms.
type histograms struct {
	title, xlabel string
	rows, cols    []string
	data          map[[2]string][]float64
}

func newHistograms(title, xlabel string) *histograms {
	return &histograms{title: title, xlabel: xlabel, data: map[[2]string][]float64{}}
}

func (h *histograms) add(row, col string, v []float64) {
	if !contains(h.rows, row) {
		h.rows = append(h.rows, row)
	}
	if !contains(h.cols, col) {
		h.cols = append(h.cols, col)
	}
	k := [2]string{row, col}
	h.data[k] = append(h.data[k], v...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// logLateness maps a lateness in µs to log10 µs, flooring at 0.01 µs (10 ns).
func logLateness(v float64) float64 { return math.Log10(max(v, 0.01)) }

// clampTo returns a transform that clamps values to [-lim, lim], so outliers show as edge bars.
func clampTo(lim float64) func(float64) float64 {
	return func(v float64) float64 { return min(max(v, -lim), lim) }
}

// save draws one histogram per (backend, series), rows by backend, into a PNG at path.
func (h *histograms) save(path string, transform func(float64) float64) error {
	const tileW, tileH = 3.2 * vg.Inch, 2.2 * vg.Inch
	// One x range for all tiles, so that the backends compare at a glance.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, vals := range h.data {
		for _, v := range vals {
			if t := transform(v); !math.IsNaN(t) && !math.IsInf(t, 0) {
				lo, hi = min(lo, t), max(hi, t)
			}
		}
	}
	plots := make([][]*plot.Plot, len(h.rows))
	for i, row := range h.rows {
		plots[i] = make([]*plot.Plot, len(h.cols))
		for j, col := range h.cols {
			p := plot.New()
			p.Title.Text = row
			if col != "" {
				p.Title.Text += " " + col
			}
			p.X.Label.Text = h.xlabel
			p.Y.Label.Text = "samples"
			vals := h.data[[2]string{row, col}]
			pv := make(plotter.Values, 0, len(vals))
			for _, v := range vals {
				if t := transform(v); !math.IsNaN(t) && !math.IsInf(t, 0) {
					pv = append(pv, t)
				}
			}
			if len(pv) > 0 {
				hist, err := plotter.NewHist(pv, 60)
				if err != nil {
					return fmt.Errorf("plot %s %s: %w", row, col, err)
				}
				p.Add(hist)
			}
			if lo < hi {
				p.X.Min, p.X.Max = lo, hi
			}
			plots[i][j] = p
		}
	}
	img := vgimg.New(max(tileW*vg.Length(len(h.cols)), 7*vg.Inch), tileH*vg.Length(len(h.rows))+0.4*vg.Inch)
	dc := draw.New(img)
	title := dc
	title.Min.Y = title.Max.Y - 0.4*vg.Inch
	sty := plot.New().Title.TextStyle
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	title.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: title.Min.Y + 0.2*vg.Inch}, h.title)
	body := dc
	body.Max.Y -= 0.4 * vg.Inch
	tiles := draw.Tiles{Rows: len(h.rows), Cols: len(h.cols), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
