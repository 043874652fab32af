package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"sort"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
)

// The executed notebook, cell by cell, for instructors. Nothing of it is
// trusted: sources and text outputs are escaped text, HTML outputs go into
// an iframe's srcdoc with an empty sandbox (no scripts, no forms, unique
// origin), PNG images are decoded and re-encoded as data: URIs, and every
// other kind of output is named, not shown.

type cellView struct {
	Index  int
	Type   string
	Source string
	// Markdown is a Markdown cell rendered to sanitised HTML.
	Markdown  template.HTML
	GraderID  string
	ExecCount *int
	Result    *domain.CellResult
	Outputs   []outputView
}

type outputView struct {
	Kind  string // "text", "stderr", "error", "html", "image", "other"
	Text  string
	HTML  string
	Image template.URL
}

const maxOutputText = 64 << 10

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func clip(s string) string {
	if len(s) > maxOutputText {
		return s[:maxOutputText] + "\n… (truncated)"
	}
	return s
}

// renderNotebook turns an executed notebook into cell views with each
// graded cell's result attached.
// probeSeedOf reads the probe seed an executed notebook recorded.
func probeSeedOf(raw []byte) (int64, bool) {
	var nb notebook.Notebook
	if err := json.Unmarshal(raw, &nb); err != nil {
		return 0, false
	}
	return nb.ProbeSeed()
}

func renderNotebook(raw []byte, results []domain.CellResult) ([]cellView, error) {
	var nb notebook.Notebook
	if err := json.Unmarshal(raw, &nb); err != nil {
		return nil, fmt.Errorf("read executed notebook: %w", err)
	}
	byID := map[string]*domain.CellResult{}
	for i := range results {
		byID[results[i].CellID] = &results[i]
	}
	out := make([]cellView, 0, len(nb.Cells))
	for i, c := range nb.Cells {
		if c == nil {
			continue
		}
		g, _ := c.Grader()
		cv := cellView{Index: i + 1, Type: c.CellType, Source: clip(string(c.Source)), GraderID: g.ID, ExecCount: c.ExecutionCount, Result: byID[g.ID]}
		if c.CellType == "markdown" {
			cv.Markdown = renderMarkdown(cv.Source)
		}
		for _, o := range c.Outputs {
			if o != nil {
				cv.Outputs = append(cv.Outputs, outputOf(o))
			}
		}
		out = append(out, cv)
	}
	return out, nil
}

func outputOf(o *notebook.Output) outputView {
	switch o.OutputType {
	case notebook.OutputStream:
		kind := "text"
		if o.Name == "stderr" {
			kind = "stderr"
		}
		return outputView{Kind: kind, Text: clip(ansi.ReplaceAllString(string(o.Text), ""))}
	case notebook.OutputError:
		tb := strings.Join(o.Traceback, "\n")
		if tb == "" {
			tb = o.Ename + ": " + o.Evalue
		}
		return outputView{Kind: "error", Text: clip(ansi.ReplaceAllString(tb, ""))}
	}
	if png, ok := o.Data["image/png"]; ok {
		if u, ok := pngDataURI(string(png)); ok {
			return outputView{Kind: "image", Image: u}
		}
	}
	if h, ok := o.Data["text/html"]; ok {
		return outputView{Kind: "html", HTML: clip(string(h))}
	}
	if t, ok := o.Data["text/plain"]; ok {
		return outputView{Kind: "text", Text: clip(ansi.ReplaceAllString(string(t), ""))}
	}
	var kinds []string
	for k := range o.Data {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return outputView{Kind: "other", Text: strings.Join(kinds, ", ")}
}

// markdownPolicy keeps what Markdown produces (text structure, code,
// tables, links) and drops everything else: scripts, styles, event
// handlers, iframes, forms. Images are dropped too: an <img> could fetch
// from anywhere (the page's CSP blocks it anyway) and notebook
// attachments are not served.
var markdownPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowURLSchemes("http", "https", "mailto")
	p.SkipElementsContent("img")
	return p
}()

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// renderMarkdown renders a Markdown cell (GitHub flavour, raw HTML
// escaped by goldmark's default and sanitised again after rendering).
func renderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(src)) //nolint:gosec // escaped
	}
	return template.HTML(markdownPolicy.SanitizeBytes(buf.Bytes())) //nolint:gosec // sanitised by bluemonday
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// pngDataURI accepts only base64 that decodes to a PNG and re-encodes it,
// so nothing but image bytes reaches the attribute.
func pngDataURI(b64 string) (template.URL, bool) {
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, b64)
	data, err := base64.StdEncoding.DecodeString(clean)
	if err != nil || !bytes.HasPrefix(data, pngMagic) {
		return "", false
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(data)), true //nolint:gosec // decoded and re-encoded PNG bytes
}
