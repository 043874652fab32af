package web

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	// The zone names a browser reports must load where the host has no
	// zoneinfo (a distroless image).
	_ "time/tzdata"
)

// Every time on a page is in one zone, the viewer's: app.js stores the
// browser's IANA zone in a cookie and reloads a page written in another
// one, so a page never mixes zones (the charts' days and hours, deadlines
// in messages and <time> elements alike). Without the cookie a page is in
// UTC throughout.

const zoneCookie = "npugrade_tz"

// maxZones bounds the page sets built for zones other than UTC (one per
// zone, built on first use); the least recently built goes first.
const maxZones = 16

var zoneName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,2}$`)

var zones sync.Map // name → *time.Location

// viewerZone is r's zone from the cookie, UTC when it is missing or not a
// zone name.
func viewerZone(r *http.Request) *time.Location {
	c, err := r.Cookie(zoneCookie)
	if err != nil {
		return time.UTC
	}
	name, err := url.PathUnescape(c.Value) // a script may have escaped the "/"
	if err != nil || len(name) > 64 || !zoneName.MatchString(name) {
		return time.UTC
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || loc.String() == "Local" {
		return time.UTC
	}
	zones.Store(name, loc)
	return loc
}

// zoneLabel names t's offset from UTC: "UTC", "UTC+8", "UTC+5:30".
func zoneLabel(t time.Time) string {
	_, off := t.Zone()
	if off == 0 {
		return "UTC"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	if off%3600 == 0 {
		return fmt.Sprintf("UTC%s%d", sign, off/3600)
	}
	return fmt.Sprintf("UTC%s%d:%02d", sign, off/3600, off%3600/60)
}

// fmtTimeIn writes a time in loc to the second (two attempts a minute
// apart must not look alike); nil and zero are "–".
func fmtTimeIn(v any, loc *time.Location) string {
	t := timeOf(v)
	if t.IsZero() {
		return "–"
	}
	t = t.In(loc)
	return t.Format("2006-01-02 15:04:05 ") + zoneLabel(t)
}

// whenIn is fmtTimeIn in a <time> element.
func whenIn(loc *time.Location) func(any) template.HTML {
	return func(v any) template.HTML {
		t := timeOf(v)
		if t.IsZero() {
			return "–"
		}
		return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `">` + fmtTimeIn(t, loc) + `</time>`) //nolint:gosec // digits and punctuation only
	}
}

// utcInText is a time the grader wrote into a message (policy's due dates).
var utcInText = regexp.MustCompile(`\b(\d{4}-\d\d-\d\d \d\d:\d\d) UTC\b`)

// zonedText rewrites the UTC times in a message into loc.
func zonedText(msg string, loc *time.Location) string {
	if loc == time.UTC || !strings.Contains(msg, " UTC") {
		return msg
	}
	return utcInText.ReplaceAllStringFunc(msg, func(m string) string {
		t, err := time.ParseInLocation("2006-01-02 15:04", utcInText.FindStringSubmatch(m)[1], time.UTC)
		if err != nil {
			return m
		}
		t = t.In(loc)
		return t.Format("2006-01-02 15:04 ") + zoneLabel(t)
	})
}

// pageSets are the parsed pages per zone: the functions that write times
// are bound at parse time, and a template cannot be cloned once executed.
type pageSets struct {
	utc   map[string]map[string]*template.Template
	mu    sync.Mutex
	zoned map[string]map[string]map[string]*template.Template
	order []string // zone names, oldest built first
}

func newPageSets() *pageSets {
	return &pageSets{utc: mustParse(time.UTC), zoned: map[string]map[string]map[string]*template.Template{}}
}

// page returns page name in lang with its times in loc.
func (s *pageSets) page(lang, name string, loc *time.Location) *template.Template {
	if loc == time.UTC {
		return s.utc[lang][name]
	}
	key := loc.String()
	s.mu.Lock()
	set, ok := s.zoned[key]
	s.mu.Unlock()
	if !ok {
		set = mustParse(loc) // outside the lock: tens of milliseconds
		s.mu.Lock()
		if have, ok := s.zoned[key]; ok {
			set = have
		} else {
			if len(s.order) >= maxZones {
				delete(s.zoned, s.order[0])
				s.order = s.order[1:]
			}
			s.zoned[key] = set
			s.order = append(s.order, key)
		}
		s.mu.Unlock()
	}
	return set[lang][name]
}
