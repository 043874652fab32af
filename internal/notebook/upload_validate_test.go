package notebook_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/notebook"
)

// TestParseSchemaProblems: each refusal names every problem at once.
func TestParseSchemaProblems(t *testing.T) {
	t.Parallel()
	big := base64.StdEncoding.EncodeToString(make([]byte, 3<<20))
	cases := []struct {
		name string
		nb   string
		want []string
	}{
		{"bad base64 attachment", `{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"markdown","source":"x","metadata":{},"attachments":{"a.png":{"image/png":"@@@not base64@@@"}}}]}`,
			[]string{`attachment "a.png" (image/png) is not valid base64`}},
		{"oversized attachment", `{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"markdown","source":"x","metadata":{},"attachments":{"a.png":{"image/png":"` + big + `"}}}]}`,
			[]string{"attachments are"}},
		{"attachment on a code cell", `{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"code","source":"x","metadata":{},"outputs":[],"attachments":{"a.txt":{"text/plain":"hi"}}}]}`,
			[]string{"is code but has attachments"}},
		{"several output problems", `{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"code","source":"x","metadata":{},"outputs":[
			{"output_type":"stream","name":"stdwhat","text":"x"},{"output_type":"display_data"},{"output_type":"error"},{"output_type":"bogus"}]}]}`,
			[]string{`stream named "stdwhat"`, `(display_data) has no "data"`, `(error) has no "ename"`, `unknown output_type "bogus"`}},
		{"wrong nbformat and a bad cell", `{"nbformat":3,"nbformat_minor":0,"cells":[{"cell_type":"heading","source":"x","metadata":{}}]}`,
			[]string{"nbformat 3 is not supported", `unknown cell_type "heading"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := notebook.Parse([]byte(tc.nb), notebook.DefaultLimits())
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseGuards: the cheap guards refuse before decoding.
func TestParseGuards(t *testing.T) {
	t.Parallel()
	lim := notebook.DefaultLimits()
	cells := `{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[` + strings.Repeat(`{"cell_type":"raw","source":"","metadata":{}},`, lim.MaxCells) + `{"cell_type":"raw","source":"","metadata":{}}]}`
	for name, tc := range map[string]struct {
		data string
		want string
	}{
		"too large":   {strings.Repeat(" ", int(lim.MaxBytes)+1), "too large"},
		"invalid utf": {"{\"nbformat\":4,\"cells\":[],\"x\":\"\xff\xfe\"}", "UTF-8"},
		"deep":        {strings.Repeat("[", 100000), "nested deeper"},
		"not json":    {"not json", "not valid JSON"},
		"many cells":  {cells, "cells, the limit is"},
	} {
		_, err := notebook.Parse([]byte(tc.data), lim)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// Bytes that are not UTF-8 anywhere in a notebook — in a cell's source,
// its metadata, a key, between values — are refused as such, before any
// other problem, as they were when the whole upload was checked first.
func TestParseRefusesNotUTF8(t *testing.T) {
	t.Parallel()
	answer, err := os.ReadFile("../../answers/ch1/01.05_chapter_practice_answer.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notebook.Parse(answer, notebook.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	doc := string(answer)
	for _, bad := range []string{"\xff", "\xed\xa0\x80", "\xe5\xa1", "\xc0\xaf", "\xf4\x90\x80\x80"} {
		for _, where := range []struct{ name, after string }{
			{"source", `"source": [` + "\n" + `    "`}, {"cell metadata", `"metadata": {`}, {"key", `{` + "\n" + `   "`},
			{"last cell", `"### BEGIN SOLUTION`}, {"notebook metadata", `"kernelspec": {`},
		} {
			i := strings.LastIndex(doc, where.after)
			if i < 0 {
				t.Fatalf("%s: %q not in the answer", where.name, where.after)
			}
			i += len(where.after)
			for _, d := range []string{doc[:i] + bad + doc[i:], doc[:i] + bad + doc[i:] + strings.Repeat("[", 100), doc[:i] + `x` + bad + `",` + doc[i:]} {
				if _, err := notebook.Parse([]byte(d), notebook.DefaultLimits()); err == nil || err.Error() != "notebook is not valid UTF-8" {
					t.Errorf("%s, %q: %v", where.name, bad, err)
				}
			}
		}
	}
}

// FuzzUploadLimits: whatever the bytes, Parse with the upload limits never
// panics, and what it accepts respects every limit.
func FuzzUploadLimits(f *testing.F) {
	f.Add([]byte(`{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{"cell_type":"markdown","source":"x","metadata":{},"attachments":{"a.png":{"image/png":"aGk="}}}]}`))
	f.Add([]byte(`{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"code","source":"x","metadata":{},"outputs":[{"output_type":"stream","name":"stdout","text":["a","b"]}]}]}`))
	f.Add([]byte("{\"nbformat\":4,\"cells\":[\"\xff\"]}"))
	f.Add([]byte(`{"cells":[{"attachments":{"a":{"b":["aGk","="]}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := notebook.DefaultLimits()
		lim.MaxBytes, lim.MaxCells, lim.MaxDepth, lim.MaxAttach = 64<<10, 50, 16, 1<<10
		nb, err := notebook.Parse(b, lim)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			return
		}
		if len(nb.Cells) > lim.MaxCells {
			t.Fatalf("accepted %d cells over the limit %d", len(nb.Cells), lim.MaxCells)
		}
		if !utf8.Valid(b) {
			t.Fatalf("accepted bytes that are not UTF-8")
		}
		for _, c := range nb.Cells {
			if len(c.Outputs) > lim.MaxOutputs {
				t.Fatalf("accepted %d outputs", len(c.Outputs))
			}
		}
	})
}
