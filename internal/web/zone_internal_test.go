package web

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestZoneLabel(t *testing.T) {
	t.Parallel()
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	ny, _ := time.LoadLocation("America/New_York")
	at := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{{at, "UTC"}, {at.In(kolkata), "UTC+5:30"}, {at.In(ny), "UTC-5"}} {
		if got := zoneLabel(c.t); got != c.want {
			t.Errorf("zoneLabel(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	for _, v := range []string{"Local", "../../etc/passwd", "Nowhere/City", strings.Repeat("A", 80)} {
		r.Header.Set("Cookie", zoneCookie+"="+v)
		if loc := viewerZone(r); loc != time.UTC {
			t.Errorf("cookie %q gave zone %v, want UTC", v, loc)
		}
	}
	if got := zonedText("shown after the due date (2026-03-01 12:00 UTC)", ny); got != "shown after the due date (2026-03-01 07:00 UTC-5)" {
		t.Errorf("zonedText: %q", got)
	}
}
