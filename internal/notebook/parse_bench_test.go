package notebook_test

import (
	"fmt"
	"strings"
	"testing"

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
