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

// Charts scale to their card (the SVG is as wide as the card, its height
// follows the viewBox), so they are drawn in a viewBox about as wide as a
// phone's card: chartFont units stay about 11 CSS px there and grow on
// wider cards (the CSS caps how wide a chart grows). Labels that would
// collide are thinned, long ones wrapped or shortened, so nothing is
// clipped at any width.
const (
	chartW    = 360.0
	chartFont = 13
	lineH     = 16.0 // one line of chart text
)

// textWidth estimates how wide s is at chartFont: CJK characters are
// about one em, Latin ones a little over half.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		if r >= 0x2E80 {
			w += chartFont
		} else {
			w += 0.6 * chartFont
		}
	}
	return w
}

// wrapText breaks s into lines no wider than width, at spaces, or
// anywhere in CJK text (which has none).
func wrapText(s string, width float64) []string {
	var lines []string
	var line []rune
	lastBreak := -1 // index in line after which a break may go
	for _, r := range s {
		if r >= 0x2E80 && len(line) > 0 {
			lastBreak = len(line) // before a CJK character
		}
		line = append(line, r)
		if r == ' ' {
			lastBreak = len(line)
		}
		if textWidth(string(line)) <= width || lastBreak <= 0 || lastBreak >= len(line) {
			continue
		}
		lines = append(lines, strings.TrimRight(string(line[:lastBreak]), " "))
		line = append([]rune(nil), line[lastBreak:]...)
		lastBreak = -1
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, string(line))
	}
	return lines
}

// shorten cuts s to width, ending it with an ellipsis (the bar's title
// keeps it whole).
func shorten(s string, width float64) string {
	if textWidth(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && textWidth(string(r)+"…") > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// writeLines writes lines as one text element centred on x, the first
// line's baseline at y.
func writeLines(sb *strings.Builder, lines []string, x, y float64, attrs string) {
	fmt.Fprintf(sb, `<text x="%g" y="%g" font-size="%d" text-anchor="middle" fill="#333"%s>`, x, y, chartFont, attrs)
	for i, l := range lines {
		dy := 0.0
		if i > 0 {
			dy = lineH
		}
		fmt.Fprintf(sb, `<tspan x="%g" dy="%g">%s</tspan>`, x, dy, esc(l))
	}
	sb.WriteString(`</text>`)
}

// columnChart draws vertical bars with a y axis (0, half, maximum), the
// value above each bar when every value fits its slot, a label under
// every bar that has room (always the last, today's or now's), and both
// axis titles.
func columnChart(c chart) template.HTML {
	const w, top, plotH, right = chartW, 22.0, 160.0, 8.0
	maxV := 0.0
	for _, b := range c.Bars {
		maxV = max(maxV, b.Value)
	}
	maxV = niceCeil(maxV)
	tickW := max(textWidth(trimFloat(maxV)), textWidth(trimFloat(maxV/2)))
	yLines := wrapText(c.YLabel, plotH)
	left := 8 + lineH*float64(len(yLines)) + tickW + 6
	plotW := w - left - right
	xLines := wrapText(c.XLabel, w-8)
	bottom := 8 + lineH + 6 + lineH*float64(len(xLines))
	h := top + plotH + bottom
	var sb strings.Builder
	openSVG(&sb, c.Title, w, h)
	// Axes and ticks.
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, top+plotH, w-right, top+plotH)
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, top, left, top+plotH)
	for _, f := range []float64{0, 0.5, 1} {
		y := top + plotH - plotH*f
		fmt.Fprintf(&sb, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd" stroke-width="1"/>`, left, y, w-right, y)
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" font-size="%d" text-anchor="end" fill="#333">%s</text>`, left-5, y+4, chartFont, esc(trimFloat(maxV*f)))
	}
	// The y title reads upwards, its lines left of the ticks.
	fmt.Fprintf(&sb, `<text transform="translate(%g %g) rotate(-90)" font-size="%d" text-anchor="middle" fill="#333">`, 4+lineH-4, top+plotH/2, chartFont)
	for i, l := range yLines {
		dy := 0.0
		if i > 0 {
			dy = lineH
		}
		fmt.Fprintf(&sb, `<tspan x="0" dy="%g">%s</tspan>`, dy, esc(l))
	}
	sb.WriteString(`</text>`)
	writeLines(&sb, xLines, w/2, top+plotH+8+lineH+6+lineH-3, "")
	n := float64(max(len(c.Bars), 1))
	slot := plotW / n
	bw := slot * 0.7
	labelW, valueW := 0.0, 0.0
	for _, b := range c.Bars {
		labelW = max(labelW, textWidth(b.Label)+4)
		valueW = max(valueW, textWidth(barText(b))+2)
	}
	every := max(1, int(math.Ceil(labelW/slot)))
	showValues := valueW <= slot
	last := len(c.Bars) - 1
	for i, b := range c.Bars {
		x := left + float64(i)*slot + (slot-bw)/2
		bh := plotH * b.Value / maxV
		y := top + plotH - bh
		text := barText(b)
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`,
			esc(b.Label), esc(text), x, y, bw, bh, c.Fill)
		if b.Value > 0 && showValues {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle" fill="#222">%s</text>`, x+bw/2, y-4, chartFont, esc(text))
		}
		sb.WriteString(`</g>`)
		// Counted from the last bar, so the newest one is always labelled.
		if (last-i)%every == 0 {
			half := textWidth(b.Label) / 2
			lx := min(max(x+bw/2, half), w-half) // the last label may not fit under its bar
			fmt.Fprintf(&sb, `<text x="%.1f" y="%g" font-size="%d" text-anchor="middle" fill="#333">%s</text>`, lx, top+plotH+8+lineH-3, chartFont, esc(b.Label))
		}
	}
	sb.WriteString(`</svg></div>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
}

func barText(b bar) string {
	if b.Text != "" {
		return b.Text
	}
	return trimFloat(b.Value)
}

// rowChart draws horizontal bars of percentages (0..100), one row per
// label, with a 0–100 % axis and its title. Labels longer than a third
// of the chart are shortened (each row's title has them whole).
func rowChart(c chart) template.HTML {
	const w, rowH, top = chartW, 26.0, 8.0
	texts := make([]string, len(c.Bars))
	labelW, textW := 0.0, textWidth("100%")
	for i, b := range c.Bars {
		texts[i] = b.Text
		if texts[i] == "" {
			texts[i] = fmt.Sprintf("%.0f%%", b.Value)
		}
		labelW = max(labelW, textWidth(b.Label))
		textW = max(textW, textWidth(texts[i]))
	}
	labelW = min(labelW, w/3)
	left := 4 + labelW + 8
	right := min(textW+10, w/3)
	plotW := w - left - right
	xLines := wrapText(c.XLabel, w-8)
	bottom := 8 + lineH + 6 + lineH*float64(len(xLines))
	h := top + rowH*float64(len(c.Bars)) + bottom
	var sb strings.Builder
	openSVG(&sb, c.Title, w, h)
	axisY := top + rowH*float64(len(c.Bars))
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555" stroke-width="1"/>`, left, axisY, left+plotW, axisY)
	for _, f := range []float64{0, 50, 100} {
		x := left + plotW*f/100
		anchor := "middle"
		if f == 100 {
			anchor = "end" // the right margin may be narrower than "100%"
		}
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd" stroke-width="1"/>`, x, top, x, axisY)
		fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="%d" text-anchor="%s" fill="#333">%g%%</text>`, x, axisY+8+lineH-3, chartFont, anchor, f)
	}
	writeLines(&sb, xLines, w/2, axisY+8+lineH+6+lineH-3, "")
	for i, b := range c.Bars {
		y := top + float64(i)*rowH
		bw := plotW * min(max(b.Value, 0), 100) / 100
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><text x="%g" y="%.1f" font-size="%d" text-anchor="end" fill="#222">%s</text>`,
			esc(b.Label), esc(texts[i]), left-8, y+rowH/2+4, chartFont, esc(shorten(b.Label, labelW)))
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%g" height="%.1f" fill="#eee"/>`, left, y+4, plotW, rowH-8)
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, left, y+4, bw, rowH-8, c.Fill)
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" font-size="%d" fill="#222">%s</text></g>`, left+plotW+6, y+rowH/2+4, chartFont, esc(shorten(texts[i], right-8)))
	}
	sb.WriteString(`</svg></div>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
}

// openSVG starts a chart that scales to its card: no width or height of
// its own, only the viewBox, whose aspect the CSS keeps (height: auto).
func openSVG(sb *strings.Builder, title string, w, h float64) {
	fmt.Fprintf(sb, `<div class="chart-wrap"><svg class="chart" viewBox="0 0 %g %g" preserveAspectRatio="xMidYMid meet" role="img" aria-labelledby="%s"><title id="%s">%s</title>`,
		w, h, chartID(title), chartID(title), esc(title))
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
