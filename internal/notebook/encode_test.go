package notebook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// encodeReflect is how Encode wrote notebooks before it wrote cells
// itself: through json.Encoder. Encode must give the same bytes.
func encodeReflect(nb *Notebook) []byte {
	nb.declareMinor()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("../../answers/*/*.ipynb")
	more, _ := filepath.Glob("../../exercises/*/*.ipynb")
	paths = append(paths, more...)
	if len(paths) == 0 {
		t.Fatal("no notebooks found under answers/ and exercises/")
	}
	tricky := `{"cells": [
	 {"cell_type": "code", "id": "a-b", "metadata": {"k&": "<x>\u2028", "z": [1, 2.50, {"y": null}]}, "source": "x = '<&>'\n\u2029y\t\u0001\"\\", "outputs": [
	   {"output_type": "stream", "name": "stdout", "text": ["a<\n", "b"]},
	   {"output_type": "execute_result", "execution_count": 3, "data": {"text/plain": "1 & 2", "application/json": {"a": [1]}}, "metadata": {}},
	   {"output_type": "error", "ename": "E", "evalue": "<v>", "traceback": ["t1", "t2"]}], "execution_count": 3},
	 {"cell_type": "markdown", "metadata": {}, "source": [], "attachments": {"i.png": {"image/png": "aGk="}}},
	 {"cell_type": "raw", "metadata": {"format": "text/<html>"}, "source": "\n\n"}],
	 "metadata": {"kernelspec": {"name": "<py>", "display_name": "P & Q"}, "empty": {}, "list": []},
	 "nbformat": 4, "nbformat_minor": 4}`
	docs := [][]byte{[]byte(tricky)}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	for i, doc := range docs {
		a, err := Parse(doc, Limits{MaxBytes: 64 << 20})
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		b, _ := Parse(doc, Limits{MaxBytes: 64 << 20})
		got, err := Encode(a)
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		if want := encodeReflect(b); !bytes.Equal(got, want) {
			t.Errorf("doc %d: Encode differs from encoding/json:\n got %.300s\nwant %.300s", i, got, want)
		}
	}
	// What Parse never lets through, but a notebook built in Go may hold.
	odd := func() *Notebook {
		one := 1
		return &Notebook{NBFormat: 4, NBFormatMinor: 5, Cells: []*Cell{
			{ID: "x<y&", CellType: "code", Source: "bad \xff utf8 \u2028", ExecutionCount: &one, Outputs: []*Output{nil}},
			{CellType: "markdown", Metadata: map[string]json.RawMessage{"n": nil}},
			nil,
		}}
	}
	got, err := Encode(odd())
	if err != nil {
		t.Fatal(err)
	}
	if want := encodeReflect(odd()); !bytes.Equal(got, want) {
		t.Errorf("odd notebook: Encode differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	if got, want := mustEncode(t, &Notebook{}), encodeReflect(&Notebook{}); !bytes.Equal(got, want) {
		t.Errorf("empty notebook: got %s, want %s", got, want)
	}
}

func mustEncode(t *testing.T, nb *Notebook) []byte {
	b, err := Encode(nb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzIndentCompact(f *testing.F) {
	for _, s := range []string{`{"a":[1,{},[]],"b":"x\"y\\"}`, `[]`, `{"k":{"l":[null,true]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(s)) != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", " "); err != nil {
			t.Fatal(err)
		}
		if got := indentCompact(nil, compact.Bytes(), 0); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q:\n got %s\nwant %s", compact.Bytes(), got, want.Bytes())
		}
	})
}
