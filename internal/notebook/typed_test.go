package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// typedCorpus is every notebook in the repository (answers, starters,
// test data of every package) and hand-written shapes at the edges of
// what decodeOnePass takes itself.
func typedCorpus(t testing.TB) []string {
	docs := []string{`{}`, `[]`, `{"cells": []}`, `{"cells": null}`, `{"cells": [null]}`, `{"metadata": null}`,
		`{"nbformat": 4, "nbformat_minor": 5, "metadata": {"a": [1, {"b": 2}], "k":"v"}, "cells": [{"cell_type": "code", "source": ["a\n", "b"], "metadata": {"x": 1}, "outputs": [], "execution_count": null}]}`,
		`{"nbformat": 4.0}`, `{"nbformat": 4e0}`, `{"nbformat": "4"}`, `{"nbformat": 99999999999999999999}`, `{"nbformat": -0}`,
		`{"Cells": [], "cells": []}`, `{"CELLS": [{"cell_type": "code"}]}`, `{"cells": [], "cells": [{}]}`, `{"metadata": {"a": 1}, "metadata": {"b": 2}}`,
		"{\"cell\u017fs\": []}", `{"nbformat_Minor": 3}`, `{"other": {"x": [1, 2]}, "cells": []}`,
		`{"cells": [{"cell_type": "code", "source": "x", "outputs": [{"output_type": "stream", "name": "stdout", "text": ["a", "b"]},
		  {"output_type": "execute_result", "execution_count": 3, "data": {"text/plain": ["1"], "application/json": {"a" : [1, 2] }}, "metadata": {}},
		  {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]}, {"output_type": "error", "traceback": []},
		  {"output_type": "display_data", "data": {"image/png": "AAAA"}, "metadata": {"isolated": true}},
		  {"output_type": "stream", "transient": {}}], "execution_count": 2, "attachments": {"a.png": {"image/png": "AA=="}}}]}`,
		`{"cells": [{"outputs": [{"metadata": null}]}]}`, `{"cells": [{"outputs": [{"text": null}]}]}`, `{"cells": [{"outputs": [{"Name": "x"}]}]}`,
		`{"cells": [{"cell_type": "markdown", "source": ["a", null]}]}`, `{"cells": [{"cell_type": "markdown", "source": 5}]}`,
		`{"cells": [{"cell_type": "markdown", "source": {"a": 1}}]}`, `{"cells": [{"cell_type": "markdown", "attachments": null}]}`,
		`{"cells": [{"cell_type": "code", "execution_count": 1.5}]}`, `{"cells": [{"cell_type": "code", "outputs": null}]}`,
		`{"cells": [{"cell_type": "code", "outputs": [null]}]}`, `{"cells": [{"id": 5}]}`, `{"cells": [{"metadata": []}]}`,
		`{"cells": [{"cell_type": "code", "outputs": [{"data": {"text/plain": 5}}]}]}`, `{"cells": [{"cell_type": "code", "outputs": [{"traceback": [null]}]}]}`,
		`{"cells": [{"source": "\ud800 \u00e9 \n"}]}`, ` {"cells" : [ { "source" : [ "a" , "b" ] } ] } `, `{"cells": []} x`, `{"cells": [}`, `{"a":1,}`}
	var paths []string
	for _, pat := range []string{"../../answers/*/*.ipynb", "../../exercises/*/*.ipynb", "../*/testdata/*.ipynb", "../*/testdata/*/*.ipynb",
		"../*/testdata/*/*/*.ipynb", "../*/testdata/*/*/*/*.ipynb", "../../cmd/npugrade/testdata/*/*/*/*.ipynb"} {
		more, _ := filepath.Glob(pat)
		paths = append(paths, more...)
	}
	if len(paths) < 20 {
		t.Fatalf("only %d notebooks found", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return docs
}

// decodeOnePass gives what the two-pass decode gives, or leaves the
// document to it.
func TestDecodeOnePass(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, d := range typedCorpus(t) {
		if checkOnePass(t, d) {
			fast++
		}
	}
	if fast < 20 {
		t.Errorf("only %d documents decoded in one pass", fast)
	}
}

// checkOnePass compares decodeOnePass on d with decodeGeneric and
// json.Unmarshal and reports whether it took d itself.
func checkOnePass(t *testing.T, d string) bool {
	t.Helper()
	doc, nb, cellRaw, ok := decodeOnePass([]byte(d), utf8.ValidString(d), false, bounds{})
	if !ok {
		return false
	}
	checkLazyCells(t, d, doc, nb, cellRaw)
	checkBounds(t, d)
	wantDoc, err := decodeGeneric([]byte(d))
	if err != nil {
		t.Fatalf("%.80q: one pass took a document decodeGeneric refuses: %v", d, err)
	}
	var want Notebook
	if err := json.Unmarshal([]byte(d), &want); err != nil {
		t.Fatalf("%.80q: one pass took a document encoding/json refuses: %v", d, err)
	}
	lightenSources(wantDoc)
	if cells, _ := wantDoc.(map[string]any)["cells"].([]any); len(cellRaw) != len(cells) {
		t.Errorf("%.80q: %d cells' bytes for %d cells", d, len(cellRaw), len(cells))
	} else {
		for i, raw := range cellRaw {
			one, err := decodeGeneric(raw)
			if m, ok := one.(map[string]any); ok {
				lighten(m, "source")
			}
			if err != nil || !reflect.DeepEqual(one, cells[i]) {
				t.Errorf("%.80q: cell %d's bytes %.40q are not the cell", d, i+1, raw)
			}
		}
	}
	if !reflect.DeepEqual(doc, wantDoc) {
		t.Errorf("%.80q: generic form differs:\n%v\n%v", d, doc, wantDoc)
	}
	if !reflect.DeepEqual(nb, &want) {
		a, _ := json.Marshal(nb)
		b, _ := json.Marshal(&want)
		t.Errorf("%.80q: typed form differs:\n%s\n%s", d, a, b)
	}
	return true
}

// checkLazyCells compares decodeOnePass with lazyCells to the full
// decode of d (doc, nb, cellRaw): the same typed form and cells' bytes,
// the same generic form but for the cells, left out, and cellDoc makes
// each cell's as decode completes the full one.
func checkLazyCells(t *testing.T, d string, doc any, nb *Notebook, cellRaw [][]byte) {
	t.Helper()
	lazyDoc, lazyNB, lazyRaw, ok := decodeOnePass([]byte(d), utf8.ValidString(d), true, bounds{})
	if !ok {
		t.Fatalf("%.80q: lazy cells: not decoded in one pass", d)
	}
	if !reflect.DeepEqual(lazyNB, nb) || !reflect.DeepEqual(lazyRaw, cellRaw) {
		t.Fatalf("%.80q: lazy cells: another typed form or other cells' bytes", d)
	}
	top, lazyTop := doc.(map[string]any), lazyDoc.(map[string]any)
	cells, _ := top["cells"].([]any)
	lazyCells, _ := lazyTop["cells"].([]any)
	if len(cells) != len(lazyCells) || !reflect.DeepEqual(shellOf(top), shellOf(lazyTop)) {
		t.Fatalf("%.80q: lazy cells: another generic form around the cells", d)
	}
	for i, c := range lazyCells {
		if c != nil {
			t.Fatalf("%.80q: lazy cells: cell %d decoded: %v", d, i+1, c)
		}
		want := shallow(cells[i].(map[string]any))
		if nb.Cells[i].ID != "" {
			want["id"] = nb.Cells[i].ID
		}
		fillCellDefaults(want)
		if !utf8.ValidString(d) {
			continue // cellDoc reads only cells of a decode that refused bytes not UTF-8 (decode)
		}
		if got := cellDoc(cellRaw[i], nb.Cells[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("%.80q: cellDoc of cell %d:\n%v\nwant\n%v", d, i+1, got, want)
		}
	}
}

// shellOf is a top-level generic form without its cells.
func shellOf(top map[string]any) map[string]any {
	s := shallow(top)
	delete(s, "cells")
	return s
}

// lightenSources empties the strings of every cell's source in doc, as
// decodeOnePass leaves them (the typed form has the text).
func lightenSources(doc any) {
	top, _ := doc.(map[string]any)
	cells, _ := top["cells"].([]any)
	for _, c := range cells {
		if m, ok := c.(map[string]any); ok {
			lighten(m, "source")
		}
	}
}

func TestDecodeOnePassTakesUploads(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../answers/ch1/01.05_chapter_practice_answer.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{string(b), strings.ReplaceAll(string(b), "\n", "\r\n\t")} {
		if !checkOnePass(t, d) {
			t.Errorf("an answer notebook was left to the two-pass decode")
		}
	}
}

func FuzzDecodeOnePass(f *testing.F) {
	for _, s := range []string{`{"cells":[{"cell_type":"code","source":["a"],"outputs":[{"output_type":"stream","text":"x"}]}]}`,
		`{"metadata":{"a":[1]},"nbformat":4}`, `{"cells":[{"attachments":{"a":{"b":"c"}},"metadata":{"k":null}}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		checkOnePass(t, d)
	})
}

// The memo of clean cells changes no verdict: every notebook parses to
// the same result the second time (its cells now remembered), and a cell
// remembered at one nbformat minor is still checked at another (a
// markdown cell's metadata.jupyter may be anything up to 4.2, an object
// from 4.3).
func TestSchemaMemoKeepsVerdicts(t *testing.T) {
	t.Parallel()
	for _, d := range typedCorpus(t) {
		_, err1 := Parse([]byte(d), Limits{})
		_, err2 := Parse([]byte(d), Limits{})
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Errorf("%.80q: first parse %v, second %v", d, err1, err2)
		}
	}
	cell := `{"cell_type": "markdown", "metadata": {"jupyter": 5}, "source": "text"}`
	for _, c := range []struct {
		minor int
		valid bool
	}{{2, true}, {3, false}, {2, true}, {3, false}} {
		nb := fmt.Sprintf(`{"nbformat": 4, "nbformat_minor": %d, "metadata": {}, "cells": [%s]}`, c.minor, cell)
		_, err := Parse([]byte(nb), Limits{})
		if (err == nil) != c.valid {
			t.Errorf("4.%d: %v, want valid %v", c.minor, err, c.valid)
		}
	}
}

// The memo finds a cell by a hash but passes it only when its minor
// version, id and bytes are those remembered: a colliding hash is a
// miss. It keeps its own copy of the bytes, and stays within its bounds.
func TestSchemaMemoComparesCells(t *testing.T) {
	t.Parallel()
	m := &cellMemo{seed: maphash.MakeSeed(), seen: map[uint64]cleanCell{}}
	raw := []byte(`{"cell_type": "raw", "metadata": {}, "source": "x"}`)
	k := m.key(4, "a", raw)
	if m.has(k) {
		t.Fatal("an empty memo has a cell")
	}
	m.add(k)
	raw[len(raw)-3] = 'y' // the upload's buffer changes: the memo's copy does not
	if m.has(m.key(4, "a", raw)) {
		t.Error("the memo passes other bytes")
	}
	raw[len(raw)-3] = 'x'
	if !m.has(m.key(4, "a", raw)) {
		t.Error("the memo lost a clean cell")
	}
	for _, other := range []cleanKey{
		{hash: k.hash, minor: 4, id: "a", raw: []byte(`{"cell_type": "raw", "metadata": {}, "source": 5}`)},
		{hash: k.hash, minor: 3, id: "a", raw: raw},
		{hash: k.hash, minor: 4, id: "b", raw: raw},
	} {
		if m.has(other) {
			t.Errorf("a cell with the same hash passes: %+v", other)
		}
	}
	if k := m.key(4, "a", make([]byte, maxMemoCellBytes+1)); k.raw != nil {
		t.Error("a cell over maxMemoCellBytes has a key")
	}
	big := make([]byte, maxMemoCellBytes)
	for i := range maxMemoBytes/maxMemoCellBytes + 2 {
		big[0] = byte(i)
		big[1] = byte(i >> 8)
		m.add(m.key(4, "a", big))
		if m.bytes > maxMemoBytes || len(m.seen) > maxMemoCells {
			t.Fatalf("the memo holds %d cells, %d bytes", len(m.seen), m.bytes)
		}
	}
}

// RebuildEncoded writes what Encode writes of Rebuild's notebook, for
// every answer in the repository as the template — as it is and as a
// 4.4 notebook whose cells have ids (Encode then assigns the missing
// ones) — and uploads that keep, change or drop the solution cells.
func TestRebuildEncodedIsEncodeOfRebuild(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("../../answers/*/*.ipynb")
	more, _ := filepath.Glob("../../cmd/npugrade/testdata/*/answers/*/*.ipynb")
	paths = append(paths, more...)
	if len(paths) < 5 {
		t.Fatalf("only %d answers found", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := ParseStored(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		old := answer.Clone()
		old.NBFormatMinor = 4
		if len(old.Cells) > 1 {
			old.Cells[1].ID = ""
		}
		for _, a := range []*Notebook{answer, old} {
			tmpl, err := NewTemplate(a)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			starter, err := Starter(a)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			edited := a.Clone()
			for i, c := range edited.Cells {
				if g := c.MustGrader(); g.Solution && i%2 == 0 {
					c.Source += "\nprint('edited')\n"
				}
			}
			for _, up := range []*Notebook{a, starter, edited, {Cells: []*Cell{}}} {
				want, _, err := tmpl.Rebuild(up, 90017)
				if err != nil {
					t.Fatal(err)
				}
				wantB, err := Encode(want)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := tmpl.RebuildEncoded(up, 90017)
				if err != nil || !bytes.Equal(got, wantB) {
					t.Errorf("%s (4.%d): RebuildEncoded differs from Encode(Rebuild) (%v)", p, a.NBFormatMinor, err)
				}
			}
		}
	}
}

// Grader metadata read again comes from the memo: equal to a fresh
// decode for every cell of every answer, and a caller changing what it
// got (the starter, a rubric line) changes nothing for the next caller.
func TestGraderMemo(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("../../answers/*/*.ipynb")
	more, _ := filepath.Glob("../../cmd/npugrade/testdata/*/answers/*/*.ipynb")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		nb, err := ParseStored(b)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range nb.Cells {
			raw := c.Metadata["grader"]
			if raw == nil {
				continue
			}
			want, wantErr := decodeGrader(raw)
			for range 2 {
				got, err := c.Grader()
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
					t.Errorf("%s cell %d: %+v, %v; decoded: %+v, %v", p, i+1, got, err, want, wantErr)
				}
			}
		}
	}
	c := &Cell{Metadata: map[string]json.RawMessage{"grader": json.RawMessage(
		`{"id": "m1", "starter": "pass", "manual": {"points": 2, "rubric": [{"points": 1, "text": "clear"}]}}`)}}
	for range 2 { // the first is decoded, the second from the memo
		first, err := c.Grader()
		if err != nil {
			t.Fatal(err)
		}
		*first.Starter = "changed"
		first.Manual.Rubric[0].Text = "changed"
	}
	g, _ := c.Grader()
	*g.Starter = "changed"
	g.Manual.Rubric[0].Text = "changed"
	g.Manual.Points = 9
	again, _ := c.Grader()
	if *again.Starter != "pass" || again.Manual.Rubric[0].Text != "clear" || again.Manual.Points != 2 || again.Manual.Rubric[0].ID != "r1" {
		t.Errorf("a caller's change reached the memo: %+v %+v", *again.Starter, *again.Manual)
	}
}

// checkBounds checks that decodeOnePass, bounded, takes d exactly when
// prescan passes it with the same limits: Parse runs prescan only for
// what the one-pass decode does not take, so an upload it took must be
// within every bound prescan enforces.
func checkBounds(t *testing.T, d string) {
	t.Helper()
	for _, depth := range []int{1, 2, 3, 4, 6, 64} {
		for _, values := range []int{1, 2, 5, 10, 30, 100, 1000, DefaultMaxValues} {
			for _, cells := range []int{1, 2, 5, 2000} {
				b := bounds{maxDepth: depth, maxValues: values, maxCells: cells}
				_, _, _, took := decodeOnePass([]byte(d), utf8.ValidString(d), true, b)
				err := prescan([]byte(d), Limits{MaxDepth: depth, MaxValues: values, MaxCells: cells})
				if took != (err == nil) {
					t.Fatalf("%.80q with %+v: one pass took it %t, prescan says %v", d, b, took, err)
				}
			}
		}
	}
}
