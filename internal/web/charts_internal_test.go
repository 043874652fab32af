package web

import (
	"fmt"
	htmltemplate "html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestChartsFitTheirViewBox: charts have only a viewBox (the CSS scales
// them to their card), every label is estimated to lie inside it, the
// labels of many bars are thinned so they do not collide, the newest bar
// keeps its label, and long axis titles and row labels wrap or shorten
// instead of running off the edge.
func TestChartsFitTheirViewBox(t *testing.T) {
	t.Parallel()
	var days, hours []bar
	for i := range 14 {
		days = append(days, bar{Label: fmt.Sprintf("12-%02d", i+1), Value: float64(i * 130)})
	}
	for i := range 25 {
		hours = append(hours, bar{Label: fmt.Sprintf("%02d:00", i%24), Value: float64(i % 3)})
	}
	long := "graded attempts that pass the question (%), hardest first"
	charts := map[string]chartCase{
		"days":  {columnChart(chart{Title: "per day", XLabel: "day (UTC, month-day)", YLabel: "submissions", Bars: days}), days[len(days)-1].Label},
		"hours": {columnChart(chart{Title: "queue", XLabel: long, YLabel: "submissions waiting", Bars: hours}), hours[len(hours)-1].Label},
		"zh":    {columnChart(chart{Title: "分布", XLabel: "通过该题的已评分提交（%），最难的在前，再加一些字让它换行显示", YLabel: "学员数", Bars: days[:10]}), days[9].Label},
		"rows": {rowChart(chart{Title: "pass", XLabel: long, Bars: []bar{
			{Label: "q1", Value: 50, Text: "50% (1/2)"}, {Label: "a-very-long-question-identifier-indeed", Value: 100, Text: "100% (12/12)"}}}), "q1"},
	}
	viewBox := regexp.MustCompile(`<svg class="chart" viewBox="0 0 ([0-9.]+) ([0-9.]+)" preserveAspectRatio="xMidYMid meet"`)
	xs := regexp.MustCompile(`x="(-?[0-9.]+)"[^>]*font-size="[0-9]+" text-anchor="(\w+)"[^>]*>(?:<tspan[^>]*>)?([^<]*)<`)
	for name, c := range charts {
		svg := string(c.html)
		m := viewBox.FindStringSubmatch(svg)
		if m == nil {
			t.Errorf("%s: no scaling viewBox: %.200s", name, svg)
			continue
		}
		if strings.Contains(svg, ` width="`+m[1]) || regexp.MustCompile(`<svg[^>]* (width|height)=`).MatchString(svg) {
			t.Errorf("%s: the svg has a fixed size", name)
		}
		w, _ := strconv.ParseFloat(m[1], 64)
		labels := map[string]bool{}
		for _, tm := range xs.FindAllStringSubmatch(svg, -1) {
			x, _ := strconv.ParseFloat(tm[1], 64)
			half := textWidth(tm[3])
			lo, hi := x-half/2, x+half/2
			switch tm[2] {
			case "end":
				lo, hi = x-half, x
			case "start":
				lo, hi = x, x+half
			}
			if lo < 0 || hi > w {
				t.Errorf("%s: label %q spans %.0f..%.0f, outside 0..%g", name, tm[3], lo, hi, w)
			}
			labels[tm[3]] = true
		}
		if !labels[c.last] {
			t.Errorf("%s: the last bar's label %q is not shown", name, c.last)
		}
	}
	if n := len(regexp.MustCompile(`>[0-9]{2}:00<`).FindAllString(string(charts["hours"].html), -1)); n > 8 {
		t.Errorf("%d of the 25 hourly bars are labelled: their labels collide", n)
	}
	if svg := string(charts["rows"].html); !strings.Contains(svg, "…") || !strings.Contains(svg, "<title>a-very-long-question-identifier-indeed: 100% (12/12)</title>") {
		t.Errorf("a long row label is not shortened, or its title lost it")
	}
	for _, tc := range []struct {
		in    string
		width float64
		lines int
	}{{"short", 100, 1}, {"graded attempts that pass the question (%), hardest first", 200, 3}, {"通过该题的已评分提交最难的在前", 120, 2}} {
		got := wrapText(tc.in, tc.width)
		for _, l := range got {
			if textWidth(l) > tc.width {
				t.Errorf("wrap %q: line %q is wider than %g", tc.in, l, tc.width)
			}
		}
		if len(got) != tc.lines || strings.Join(got, "") != strings.ReplaceAll(tc.in, " ", "") && strings.Join(got, " ") != tc.in {
			t.Errorf("wrap %q at %g: %q", tc.in, tc.width, got)
		}
	}
}

type chartCase struct {
	html htmltemplate.HTML
	last string
}
