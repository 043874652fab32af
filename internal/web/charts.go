package web

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"math"
	"strings"
)

// Charts are SVG drawn here, on the server: no script, no library, and
// every label is escaped (learner names and messages may reach a label).
// Colours are presentation attributes, not style attributes, so the
// Content-Security-Policy's style-src needs no 'unsafe-inline'.

type bar struct {
	Label string
	Value float64
	// Text is the value as written on the bar (default: %g of Value).
	Text string
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// chart describes one chart: its title, what each axis shows (with the
// unit), the bars and their colour.
type chart struct {
	Title, XLabel, YLabel string
	Bars                  []bar
	Fill                  string
}

// Charts are drawn at their natural size in CSS pixels (the figure
// scrolls sideways on a narrow screen instead of shrinking), so every
// label stays at least 11 px tall.
const chartFont = 12

// columnChart draws vertical bars with a y axis (0, half, maximum), the
// value above each bar, the label under it, and both axis titles.
func columnChart(c chart) template.HTML {
	const w, h, top, bottom, left, right = 640.0, 260.0, 28.0, 58.0, 56.0, 12.0
	maxV := 0.0
	for _, b := range c.Bars {
		maxV = max(maxV, b.Value)
	}
	maxV = niceCeil(maxV)
	var sb strings.Builder
	openSVG(&sb, c.Title, w, h)
	plotH, plotW := h-top-bottom, w-left-right
	// Axes and ticks.
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, top, left, h-bottom)
	for _, f := range []float64{0, 0.5, 1} {
		y := h - bottom - plotH*f
		fmt.Fprintf(&sb, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd" stroke-width="1"/>`, left, y, w-right, y)
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" font-size="%d" text-anchor="end" fill="#333">%s</text>`, left-6, y+4, chartFont, esc(trimFloat(maxV*f)))
	}
	fmt.Fprintf(&sb, `<text transform="translate(14 %g) rotate(-90)" font-size="%d" text-anchor="middle" fill="#333">%s</text>`,
		top+plotH/2, chartFont, esc(c.YLabel))
	fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="%d" text-anchor="middle" fill="#333">%s</text>`, left+plotW/2, h-8, chartFont, esc(c.XLabel))
	n := float64(max(len(c.Bars), 1))
	slot := plotW / n
	bw := slot * 0.7
	every := 1
	if len(c.Bars) > 12 {
		every = (len(c.Bars) + 11) / 12
	}
	for i, b := range c.Bars {
		x := left + float64(i)*slot + (slot-bw)/2
		bh := plotH * b.Value / maxV
		y := h - bottom - bh
		text := b.Text
		if text == "" {
			text = trimFloat(b.Value)
		}
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`,
			esc(b.Label), esc(text), x, y, bw, bh, c.Fill)
		if b.Value > 0 && len(c.Bars) <= 24 {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle" fill="#222">%s</text>`, x+bw/2, y-4, chartFont, esc(text))
		}
		sb.WriteString(`</g>`)
		if i%every == 0 {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%g" font-size="%d" text-anchor="middle" fill="#333">%s</text>`, x+bw/2, h-bottom+18, chartFont, esc(b.Label))
		}
	}
	sb.WriteString(`</svg></div>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
}

// rowChart draws horizontal bars of percentages (0..100), one row per
// label, with a 0–100 % axis and its title.
func rowChart(c chart) template.HTML {
	const w, rowH, left, right, top, bottom = 640.0, 28.0, 120.0, 120.0, 8.0, 46.0
	h := top + rowH*float64(len(c.Bars)) + bottom
	var sb strings.Builder
	openSVG(&sb, c.Title, w, h)
	plotW := w - left - right
	axisY := top + rowH*float64(len(c.Bars))
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, axisY, left+plotW, axisY)
	for _, f := range []float64{0, 50, 100} {
		x := left + plotW*f/100
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd" stroke-width="1"/>`, x, top, x, axisY)
		fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="%d" text-anchor="middle" fill="#333">%g%%</text>`, x, axisY+16, chartFont, f)
	}
	fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="%d" text-anchor="middle" fill="#333">%s</text>`, left+plotW/2, h-6, chartFont, esc(c.XLabel))
	for i, b := range c.Bars {
		y := top + float64(i)*rowH
		bw := plotW * min(max(b.Value, 0), 100) / 100
		text := b.Text
		if text == "" {
			text = fmt.Sprintf("%.0f%%", b.Value)
		}
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><text x="%g" y="%.1f" font-size="%d" text-anchor="end" fill="#222">%s</text>`,
			esc(b.Label), esc(text), left-8, y+rowH/2+4, chartFont, esc(b.Label))
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%g" height="%.1f" fill="#eee"/>`, left, y+4, plotW, rowH-8)
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, left, y+4, bw, rowH-8, c.Fill)
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" font-size="%d" fill="#222">%s</text></g>`, left+plotW+6, y+rowH/2+4, chartFont, esc(text))
	}
	sb.WriteString(`</svg></div>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
}

// openSVG starts a chart at its natural pixel size inside a scrolling figure.
func openSVG(sb *strings.Builder, title string, w, h float64) {
	fmt.Fprintf(sb, `<div class="chart-wrap"><svg class="chart" width="%g" height="%g" viewBox="0 0 %g %g" role="img" aria-labelledby="%s"><title id="%s">%s</title>`,
		w, h, w, h, chartID(title), chartID(title), esc(title))
}

// niceCeil rounds a maximum up to 1, 2 or 5 times a power of ten (at
// least 1), so the axis ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// chartID makes an element id from a title (ids only need to be unique per page).
func chartID(title string) string {
	var sb strings.Builder
	sb.WriteString("chart-")
	for _, r := range title {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			sb.WriteRune(r)
		}
	}
	h := fnv.New32a()
	h.Write([]byte(title))
	fmt.Fprintf(&sb, "-%x", h.Sum32())
	return sb.String()
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
