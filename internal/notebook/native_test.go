package notebook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// nativeCells are cells around the shapes nativeValid vouches for, each
// next to what makes the schema refuse it: keys missing, extra or of
// the wrong type, outputs of each type likewise, MIME bundles with
// objects where strings belong, metadata the schema defines.
func nativeCells() []string {
	outs := []string{
		`{"output_type": "stream", "name": "stdout", "text": ["a\n", "b"]}`, `{"output_type": "stream", "name": "stderr", "text": "a"}`,
		`{"output_type": "stream", "name": "stdout"}`, `{"output_type": "stream", "text": "a"}`, `{"output_type": "stream", "name": "x", "text": {"a": 1}}`,
		`{"output_type": "stream", "name": "stdout", "text": "a", "metadata": {}}`, `{"output_type": "stream", "name": "stdout", "text": "a", "transient": {}}`,
		`{"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": ["1"]}, "metadata": {}}`,
		`{"output_type": "execute_result", "execution_count": null, "data": {"application/json": {"a": [1]}, "application/vnd.x+json": [], "text/html": "<b>"}, "metadata": {"isolated": true}}`,
		`{"output_type": "execute_result", "execution_count": -1, "data": {}, "metadata": {}}`, `{"output_type": "execute_result", "data": {}, "metadata": {}}`,
		`{"output_type": "execute_result", "execution_count": 1, "data": {}}`, `{"output_type": "execute_result", "execution_count": 1, "metadata": {}}`,
		`{"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": {"a": 1}}, "metadata": {}}`,
		`{"output_type": "execute_result", "execution_count": 1, "data": {"application/json\n": {"a": 1}}, "metadata": {}}`,
		`{"output_type": "execute_result", "execution_count": 1, "data": {"application/x+json": {}, "image/png": "AAAA"}, "metadata": []}`,
		`{"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": ["a", "b"]}, "metadata": {"image/png": {"width": 3}}}`,
		`{"output_type": "display_data", "data": {"text/plain": "a"}, "metadata": {}, "execution_count": 1}`, `{"output_type": "display_data", "data": {"text/plain": "a"}}`,
		`{"output_type": "display_data", "data": {"text/plain": "a"}, "metadata": "x"}`, `{"output_type": "display_data", "data": {"application/+json": {}}, "metadata": {}}`,
		`{"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}`, `{"output_type": "error", "ename": "E", "evalue": "v"}`,
		`{"output_type": "error", "ename": "E", "traceback": []}`, `{"output_type": "error", "ename": "E", "evalue": "v", "traceback": [], "name": "x"}`,
		`{"output_type": "unknown", "x": 1}`, `{"name": "stdout", "text": "a"}`, `{"output_type": "stream", "name": "stdout", "text": "a", "Text": "b"}`,
	}
	metas := []string{`{}`, `{"grader": {"id": "q1", "points": 2}, "deletable": false, "editable": true}`, `{"name": "n"}`, `{"name": ""}`,
		`{"name": "a\nb"}`, `{"name": "a\u2028b"}`, `{"name": 5}`, `{"tags": ["a", "b"]}`, `{"tags": []}`, `{"tags": ["a", "a"]}`, `{"tags": ["a,b"]}`,
		`{"tags": [""]}`, `{"tags": "a"}`, `{"tags": ["a", 1]}`, `{"tags": [ "x" , "y\n" ]}`, `{"jupyter": {"source_hidden": true}}`, `{"jupyter": 5}`,
		`{"collapsed": true}`, `{"collapsed": "yes"}`, `{"scrolled": "auto"}`, `{"scrolled": "no"}`, `{"scrolled": false}`, `{"format": "text/x"}`,
		`{"format": 1}`, `{"execution": {"iopub.status.busy": "2024"}}`, `{"execution": {"a": 1}}`, `{"name": "a\\\"b"}`}
	var cells []string
	for _, t := range []string{"code", "markdown", "raw"} {
		for _, m := range metas {
			cells = append(cells, fmt.Sprintf(`{"cell_type": %q, "metadata": %s, "source": "x"}`, t, m))
		}
		for _, rest := range []string{`"source": ["a\n", "b"]`, `"source": {"a": 1}`, `"metadata": {}`, `"source": "x", "metadata": {}, "outputs": []`,
			`"source": "x", "metadata": {}, "execution_count": null`, `"source": "x", "metadata": {}, "execution_count": 3`,
			`"source": "x", "metadata": {}, "execution_count": -2`, `"source": "x", "metadata": {}, "attachments": {"a.png": {"image/png": "AA=="}}`,
			`"source": "x", "metadata": {}, "attachments": {}`, `"source": "x", "extra": 1`, `"source": "x", "id": ""`, `"source": "x", "id": "ok-id_1"`,
			`"source": "x", "id": "bad id"`, `"source": "x", "id": "` + strings.Repeat("a", 65) + `"`} {
			cells = append(cells, fmt.Sprintf(`{"cell_type": %q, %s}`, t, rest))
		}
		for _, o := range outs {
			cells = append(cells, fmt.Sprintf(`{"cell_type": %q, "metadata": {}, "source": "x", "execution_count": 1, "outputs": [%s]}`, t, o))
		}
	}
	return append(cells, `{"cell_type": "other", "metadata": {}, "source": "x"}`, `{"metadata": {}, "source": "x"}`)
}

// nativeTops are notebooks around one plain cell, of a minor version
// to fill in (%d), with what the schema asks of the notebook itself
// done right and wrong.
func nativeTops() []string {
	var tops []string
	for _, m := range []string{`{}`, `{"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}`,
		`{"kernelspec": {"name": "python3"}}`, `{"kernelspec": {"name": 3, "display_name": "P"}}`, `{"kernelspec": []}`,
		`{"language_info": {"name": "python", "version": "3.11", "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py", "mimetype": "text/x-python", "pygments_lexer": "ipython3"}}`,
		`{"language_info": {"name": "python", "codemirror_mode": "python"}}`, `{"language_info": {"name": "python", "codemirror_mode": null}}`,
		`{"language_info": {"name": "python", "codemirror_mode": 3}}`, `{"language_info": {"version": "3"}}`, `{"language_info": {"name": "p", "mimetype": 1}}`,
		`{"title": "T"}`, `{"title": 1}`, `{"authors": [{"name": "a"}]}`, `{"authors": {}}`, `{"orig_nbformat": 3}`, `{"orig_nbformat": 0}`,
		`{"grader": {"version": 1}, "toc": null}`} {
		tops = append(tops, `{"nbformat": 4, "nbformat_minor": %d, "metadata": `+m+`, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "y"}]}`)
	}
	return append(tops, `{"nbformat": 4, "nbformat_minor": %d, "cells": []}`, `{"nbformat": 4, "nbformat_minor": %d, "metadata": {}, "cells": [], "x": 1}`,
		`{"nbformat": 4, "nbformat_minor": %d, "metadata": {}}`, `{"nbformat": 4.0, "nbformat_minor": %d, "metadata": {}, "cells": []}`,
		`{"nbformat": 4, "nbformat_minor": "%d", "metadata": {}, "cells": []}`, `{"nbformat": 4, "nbformat_minor": %d.0, "metadata": {}, "cells": []}`,
		`{"nbformat": 4, "nbformat_minor": -%d, "metadata": {}, "cells": []}`, `{"nbformat": 4, "nbformat_minor": 1%d, "metadata": {}, "cells": []}`,
		`{"nbformat": 4, "nbformat_minor": 0%d, "metadata": {}, "cells": []}`, `{"nbformat": 4, "metadata": {}, "cells": [], "m": %d}`,
		`{"nbformat": 5, "nbformat_minor": %d, "metadata": {}, "cells": []}`, `{"nbformat": 4, "nbformat_minor": %d, "metadata": null, "cells": []}`)
}

// nativeCorpus is every notebook of typedCorpus, each cell of
// nativeCells in a notebook of every minor version with and without ids,
// and the answers and exercises declared as every minor version.
func nativeCorpus(t testing.TB) []string {
	docs := typedCorpus(t)
	for _, c := range nativeCells() {
		for minor := 0; minor <= 5; minor++ {
			for _, other := range []string{`{"cell_type": "markdown", "metadata": {}, "source": "y"}`, `{"id": "other", "cell_type": "markdown", "metadata": {}, "source": "y"}`} {
				docs = append(docs, fmt.Sprintf(`{"nbformat": 4, "nbformat_minor": %d, "metadata": {}, "cells": [%s, %s]}`, minor, c, other))
			}
		}
	}
	for _, top := range nativeTops() {
		for minor := 0; minor <= 5; minor++ {
			docs = append(docs, fmt.Sprintf(top, minor))
		}
	}
	var paths []string
	for _, pat := range []string{"../../answers/*/*.ipynb", "../../exercises/*/*.ipynb"} {
		more, _ := filepath.Glob(pat)
		paths = append(paths, more...)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var nb map[string]any
		if json.Unmarshal(b, &nb) != nil {
			continue
		}
		for minor := 0; minor <= 4; minor++ {
			nb["nbformat_minor"] = minor
			cells, _ := nb["cells"].([]any)
			for _, c := range cells {
				if m, ok := c.(map[string]any); ok {
					delete(m, "id")
				}
			}
			out, _ := json.Marshal(nb)
			docs = append(docs, string(out))
		}
	}
	return docs
}

// checkNative parses d with and without nativeValid and rootNative: the
// same notebook or the same problems. Every cell nativeValid vouches for
// is valid against the schema by itself, wherever Parse would not look
// (a cell with a problem of its own), and so is the notebook around the
// cells where rootNative vouches for it. It returns how many cells and
// notebooks were vouched for.
func checkNative(t *testing.T, d string) int {
	t.Helper()
	nb1, err1 := parse([]byte(d), DefaultLimits(), true)
	nb2, err2 := parse([]byte(d), DefaultLimits(), false)
	if problemSet(err1) != problemSet(err2) || !reflect.DeepEqual(nb1, nb2) {
		t.Fatalf("%.200q:\nnative: %v\nschema: %v", d, err1, err2)
	}
	dec, err := decode([]byte(d), DefaultLimits().withDefaults())
	if err != nil || dec.nb.NBFormat != 4 || dec.minor < 0 || dec.minor > 5 {
		return 0
	}
	n := 0
	if top, _ := dec.doc.(map[string]any); top != nil {
		shell := shallow(top)
		shell["cells"] = []any{}
		if rootNative(shell, dec.minor) {
			n++
			if probs := schemaProblems(shell, dec.minor, nil, nil, nil, nil, false); len(probs) > 0 {
				t.Fatalf("%.200q: the notebook (4.%d) vouched for, but %s", d, dec.minor, probs[0])
			}
		}
	}
	for i, sh := range dec.shapes {
		c := dec.nb.Cells[i]
		if !nativeValid(sh, c, dec.minor) {
			continue
		}
		n++
		cell := cellDoc(dec.cellRaw[i], c)
		shell := map[string]any{"nbformat": json.Number("4"), "nbformat_minor": json.Number(fmt.Sprint(dec.minor)), "metadata": map[string]any{}, "cells": []any{cell}}
		for _, p := range schemaProblems(shell, dec.minor, nil, nil, nil, nil, false) {
			if strings.HasPrefix(p, "cell ") {
				t.Fatalf("%.200q: cell %d (4.%d) vouched for, but %s", d, i+1, dec.minor, p)
			}
		}
	}
	return n
}

// problemSet is err's text as a set of lines, each with its bytes
// sorted: the validator names properties, and the problems of one
// object, in map order.
func problemSet(err error) string {
	lines := strings.Split(fmt.Sprint(err), "\n")
	for i, l := range lines {
		b := []byte(l)
		slices.Sort(b)
		lines[i] = string(b)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestNativeMatchesSchema(t *testing.T) {
	t.Parallel()
	vouched := 0
	for _, d := range nativeCorpus(t) {
		vouched += checkNative(t, d)
	}
	if vouched < 1000 {
		t.Errorf("only %d cells vouched for", vouched)
	}
}

// Every cell of the course's answers and exercises is vouched for: the
// validator is left the unusual cells, not the course's.
func TestNativeTakesCourseCells(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("../../answers/*/*.ipynb")
	more, _ := filepath.Glob("../../exercises/*/*.ipynb")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := decode(b, DefaultLimits().withDefaults())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(dec.shapes) != len(dec.nb.Cells) {
			t.Fatalf("%s: %d shapes for %d cells", p, len(dec.shapes), len(dec.nb.Cells))
		}
		for i, sh := range dec.shapes {
			if !nativeValid(sh, dec.nb.Cells[i], dec.minor) {
				t.Errorf("%s: cell %d (%+v) left to the validator", p, i+1, sh)
			}
		}
	}
}

// FuzzNativeMatchesSchema: whatever the bytes, nativeValid changes no
// verdict of Parse's, and vouches for no cell the schema refuses.
func FuzzNativeMatchesSchema(f *testing.F) {
	for _, d := range nativeCorpus(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d string) {
		checkNative(t, d)
	})
}
