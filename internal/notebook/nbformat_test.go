package notebook_test

import (
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/notebook"
)

// TestMissingIDsAssigned: a 4.5 notebook without cell ids (what the
// learning hub publishes) is read as nbformat reads it: every cell gets an
// id, the same one each time, and the notebook stays valid 4.5.
func TestMissingIDsAssigned(t *testing.T) {
	t.Parallel()
	doc := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
	  {"cell_type": "markdown", "metadata": {}, "source": "# 练习"},
	  {"cell_type": "code", "id": "cell-keep", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": null},
	  {"cell_type": "code", "metadata": {}, "source": "print(x)", "outputs": [
	    {"output_type": "stream", "name": "stdin", "text": "name? "}], "execution_count": 1}]}`
	a, err := notebook.Parse([]byte(doc), notebook.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	b, err := notebook.Parse([]byte(doc), notebook.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range a.Cells {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("cell %d: id %q missing or repeated", i+1, c.ID)
		}
		seen[c.ID] = true
		if b.Cells[i].ID != c.ID {
			t.Errorf("cell %d: ids differ between two reads: %q, %q", i+1, c.ID, b.Cells[i].ID)
		}
	}
	if a.Cells[1].ID != "cell-keep" {
		t.Errorf("an existing id was changed to %q", a.Cells[1].ID)
	}
	out, err := notebook.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notebook.Parse(out, notebook.Limits{RequireIDs: true}); err != nil {
		t.Errorf("the encoded notebook does not validate with ids required: %v", err)
	}
}

// TestDeclaredMinorMatchesContent: a 4.0–4.4 notebook given ids (an
// imported answer, a starter, a rebuilt notebook) is written as 4.5, with
// an id on every cell, so Jupyter and nbformat.validate accept it.
func TestDeclaredMinorMatchesContent(t *testing.T) {
	t.Parallel()
	doc := `{"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": [
	  {"cell_type": "markdown", "metadata": {}, "source": "intro"},
	  {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": null}]}`
	nb, err := notebook.Parse([]byte(doc), notebook.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := notebook.Encode(nb)
	if !strings.Contains(string(out), `"nbformat_minor": 2`) || strings.Contains(string(out), `"id"`) {
		t.Fatalf("a 4.2 notebook without ids must stay 4.2 without ids:\n%s", out)
	}
	nb.Cells[1].ID = "solution"
	out, _ = notebook.Encode(nb)
	if !strings.Contains(string(out), `"nbformat_minor": 5`) {
		t.Fatalf("a notebook with ids is not declared 4.5:\n%s", out)
	}
	again, err := notebook.Parse(out, notebook.Limits{RequireIDs: true})
	if err != nil {
		t.Fatalf("re-read with ids required: %v", err)
	}
	if again.Cells[0].ID == "" || again.Cells[1].ID != "solution" {
		t.Errorf("ids after the minor upgrade: %q, %q", again.Cells[0].ID, again.Cells[1].ID)
	}
}

// TestSchemaProblems: what only the official schema forbids is refused,
// every problem named with its place, and the list is bounded.
func TestSchemaProblems(t *testing.T) {
	t.Parallel()
	doc := `{"nbformat": 4, "nbformat_minor": 4, "metadata": {"kernelspec": {"name": "python3"}}, "extra": 1, "cells": [
	  {"cell_type": "markdown", "metadata": {"tags": ["a,b"]}, "source": "x"},
	  {"cell_type": "code", "metadata": {}, "source": "x", "outputs": [{"output_type": "stream", "name": "stdout"}], "execution_count": "one"}]}`
	_, err := notebook.Parse([]byte(doc), notebook.DefaultLimits())
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"display_name", "extra", "cell 1 at /metadata/tags/0", "cell 2 at /execution_count", "cell 2 output 1", "text"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	var b strings.Builder
	b.WriteString(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [`)
	for i := 0; i < 500; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"cell_type": "raw", "metadata": {"tags": "not a list"}, "source": "x"}`)
	}
	b.WriteString("]}")
	_, err = notebook.Parse([]byte(b.String()), notebook.DefaultLimits())
	if err == nil {
		t.Fatal("accepted 500 bad cells")
	}
	if n := strings.Count(err.Error(), "(nbformat schema)"); n == 0 || n > 25 {
		t.Errorf("%d schema problems reported for 500 bad cells; want a bounded list", n)
	}
	if !strings.Contains(err.Error(), "more problems") {
		t.Errorf("the bounded list does not say that problems were left out: %v", err)
	}
}
