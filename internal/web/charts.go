package web

import (
	"fmt"
	"hash/fnv"
	"html/template"
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

// columnChart draws vertical bars with a value above each and the label under it.
func columnChart(title string, bars []bar, fill string) template.HTML {
	const w, h, top, bottom, left, right = 640.0, 240.0, 24.0, 44.0, 36.0, 8.0
	maxV := 0.0
	for _, b := range bars {
		maxV = max(maxV, b.Value)
	}
	if maxV == 0 {
		maxV = 1
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %g %g" width="100%%" role="img" aria-labelledby="%s"><title id="%s">%s</title>`,
		w, h, chartID(title), chartID(title), esc(title))
	plotH := h - top - bottom
	fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#888" stroke-width="1"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="11" text-anchor="end" fill="#555">%s</text>`, left-4, top+4, esc(trimFloat(maxV)))
	fmt.Fprintf(&sb, `<text x="%g" y="%g" font-size="11" text-anchor="end" fill="#555">0</text>`, left-4, h-bottom)
	n := float64(max(len(bars), 1))
	slot := (w - left - right) / n
	bw := slot * 0.7
	every := 1
	if len(bars) > 16 {
		every = (len(bars) + 15) / 16
	}
	for i, b := range bars {
		x := left + float64(i)*slot + (slot-bw)/2
		bh := plotH * b.Value / maxV
		y := h - bottom - bh
		text := b.Text
		if text == "" {
			text = trimFloat(b.Value)
		}
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`,
			esc(b.Label), esc(text), x, y, bw, bh, fill)
		if b.Value > 0 {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#222">%s</text>`, x+bw/2, y-4, esc(text))
		}
		fmt.Fprintf(&sb, `</g>`)
		if i%every == 0 {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%g" font-size="11" text-anchor="middle" fill="#333">%s</text>`, x+bw/2, h-bottom+16, esc(b.Label))
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
}

// rowChart draws horizontal bars of percentages (0..100), one row per label.
func rowChart(title string, bars []bar, fill string) template.HTML {
	const w, rowH, left, right = 640.0, 26.0, 110.0, 110.0
	h := rowH*float64(len(bars)) + 10
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %g %g" width="100%%" role="img" aria-labelledby="%s"><title id="%s">%s</title>`,
		w, h, chartID(title), chartID(title), esc(title))
	for i, b := range bars {
		y := 5 + float64(i)*rowH
		bw := (w - left - right) * min(max(b.Value, 0), 100) / 100
		text := b.Text
		if text == "" {
			text = fmt.Sprintf("%.0f%%", b.Value)
		}
		fmt.Fprintf(&sb, `<g><title>%s: %s</title><text x="%g" y="%.1f" font-size="12" text-anchor="end" fill="#222">%s</text>`,
			esc(b.Label), esc(text), left-8, y+rowH/2+4, esc(b.Label))
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%g" height="%.1f" fill="#eee"/>`, left, y+3, w-left-right, rowH-8)
		fmt.Fprintf(&sb, `<rect x="%g" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, left, y+3, bw, rowH-8, fill)
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" font-size="12" fill="#222">%s</text></g>`, w-right+6, y+rowH/2+4, esc(text))
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String()) //nolint:gosec // every interpolated string is escaped above
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
