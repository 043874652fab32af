package notebook_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/notebook"
)

// BenchmarkParse parses an upload of about 4 MB (400 code cells with
// outputs): the typed decode, the generic decode and the nbformat schema
// check together.
func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [`)
	line := strings.Repeat("x", 100)
	for i := 0; i < 400; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"id": "c%d", "cell_type": "code", "metadata": {}, "execution_count": 1, "source": "print(%d)", "outputs": [{"output_type": "stream", "name": "stdout", "text": [`, i, i)
		for k := 0; k < 100; k++ {
			if k > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `"%s\n"`, line)
		}
		sb.WriteString(`]}]}`)
	}
	sb.WriteString("]}")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := notebook.Parse(data, notebook.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseUpload parses what the intake benchmark posts: the ch1
// answer with a ~100 KB markdown cell added (cmd/npugrade padded).
func BenchmarkParseUpload(b *testing.B) {
	data := paddedAnswer(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := notebook.Parse(data, notebook.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports the process's CPU time per op (GC included) when
// the returned func runs: on a shared machine it varies far less than
// the wall time does.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}

// BenchmarkRebuildUpload is the rest of intake's notebook work on that
// upload: rebuild from the answer's prepared template (the answer as it
// is, without the padding: the server's template) and encode.
func BenchmarkRebuildUpload(b *testing.B) {
	tmpl, nb := intakeTemplate(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, _, err := tmpl.RebuildEncoded(nb, 17); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntakeNotebook is all of intake's notebook work on one
// upload, as internal/intake does it: Parse, then RebuildEncoded.
func BenchmarkIntakeNotebook(b *testing.B) {
	tmpl, _ := intakeTemplate(b)
	data := paddedAnswer(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		nb, err := notebook.Parse(data, notebook.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := tmpl.RebuildEncoded(nb, 17); err != nil {
			b.Fatal(err)
		}
	}
}

// intakeTemplate is the template of the ch1 answer and the parsed
// padded upload.
func intakeTemplate(b *testing.B) (*notebook.Template, *notebook.Notebook) {
	raw, err := os.ReadFile("../../answers/ch1/01.05_chapter_practice_answer.ipynb")
	if err != nil {
		b.Fatal(err)
	}
	answer, err := notebook.ParseStored(raw)
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := notebook.NewTemplate(answer)
	if err != nil {
		b.Fatal(err)
	}
	nb, err := notebook.Parse(paddedAnswer(b), notebook.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	return tmpl, nb
}

func paddedAnswer(b *testing.B) []byte {
	raw, err := os.ReadFile("../../answers/ch1/01.05_chapter_practice_answer.ipynb")
	if err != nil {
		b.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(raw, &nb); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("填充 padding text for the benchmark. ", (100<<10)/40)
	nb["cells"] = append(nb["cells"].([]any), map[string]any{"id": "padding", "cell_type": "markdown", "metadata": map[string]any{}, "source": pad})
	data, err := json.Marshal(nb)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
