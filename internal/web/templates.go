package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

var pageNames = []string{"login", "logout", "error", "exercises", "exercise", "submission",
	"dashboard", "exercise_stats", "gradebook", "users", "runners", "regrade", "audit",
	"extensions", "similarity",
	"manual", "requests",
	"references",
	"device", "account",
	"deeplink", "autopost", "lti_admin",
}

// mustParse builds every page once per language, each with its own
// translation function and its times in loc, from the embedded templates.
func mustParse(loc *time.Location) map[string]map[string]*template.Template {
	out := map[string]map[string]*template.Template{}
	for _, lang := range []string{langEN, langZH} {
		out[lang] = map[string]*template.Template{}
		funcs := template.FuncMap{
			"t":         func(key string) string { return translate(lang, key) },
			"st":        func(status string) string { return translate(lang, "st."+status) },
			"vd":        func(verdict string) string { return translate(lang, "v."+verdict) },
			"role":      func(r domain.Role) string { return translate(lang, "role."+string(r)) },
			"fbk":       func(msg string) string { return zonedText(translateFeedback(lang, msg), loc) },
			"plural":    func(key string, n int) string { return plural(lang, key, n) },
			"when":      whenIn(loc),
			"num":       trimFloat,
			"dur":       fmtDuration,
			"verdict":   verdictClass,
			"staff":     func(r domain.Role) bool { return r.CanSeeAll() },
			"latesteps": func(raw json.RawMessage) []string { return lateSchedule(lang, lateSteps(raw)) },
			"pair":      func(a, b string) [2]string { return [2]string{a, b} },
			"pair2":     func(a string, b any) []any { return []any{a, b} },
			"scored":    domain.Scored,
			"size":      domain.FormatSize,
			"pct": func(a, b float64) string {
				if b <= 0 {
					return "–"
				}
				return fmt.Sprintf("%.0f%%", 100*a/b)
			},
		}
		for _, name := range pageNames {
			t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
			out[lang][name] = t
		}
	}
	return out
}

// timeOf reads a time.Time or *time.Time; nil is the zero time.
func timeOf(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x
	case *time.Time:
		if x != nil {
			return *x
		}
	}
	return time.Time{}
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func verdictClass(v string) string {
	switch v {
	case domain.VerdictPass, domain.StatusGraded:
		return "ok"
	case domain.VerdictNotRun, domain.StatusQueued, domain.StatusRunning, "",
		domain.VerdictNeedsManual, domain.VerdictManual:
		return "neutral"
	}
	return "bad"
}
