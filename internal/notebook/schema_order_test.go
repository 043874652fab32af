package notebook_test

import (
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/notebook"
)

// TestSchemaProblemsStable: the same invalid upload gets the same
// problems, word for word, every time (the validator's own order of
// extra properties and of causes is a map's), so a learner who uploads
// it again sees nothing change.
func TestSchemaProblemsStable(t *testing.T) {
	t.Parallel()
	nb := []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "zz": 1, "yy": 2, "cells": [
  {"id": "a", "cell_type": "markdown", "metadata": {}, "source": "x", "q3": 1, "q1": 2, "q2": 3, "attachments": 5},
  {"id": "b", "cell_type": "code", "metadata": {}, "source": "x", "outputs": [], "execution_count": "x", "w2": 1, "w1": 2}]}`)
	var first string
	for i := 0; i < 100; i++ {
		_, err := notebook.Parse(nb, notebook.DefaultLimits())
		if err == nil {
			t.Fatal("an invalid notebook was accepted")
		}
		if i == 0 {
			first = err.Error()
			for _, want := range []string{"'yy', 'zz' not allowed", "'q1', 'q2', 'q3' not allowed", "'w1', 'w2' not allowed"} {
				if !strings.Contains(first, want) {
					t.Errorf("problems lack %q:\n%s", want, first)
				}
			}
			continue
		}
		if err.Error() != first {
			t.Fatalf("parse %d reported\n%s\nwhere the first reported\n%s", i+1, err, first)
		}
	}
}
