package notebook

import (
	"encoding/json"
	"testing"
)

// TestJSONMimeValuesOfAnyType: nbformat lets an application/json (or
// application/*+json) value be any JSON value; IPython.display.JSON([1, 2])
// records a list of numbers. Such outputs are accepted, and written back
// as the same JSON value, not as text.
func TestJSONMimeValuesOfAnyType(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{
		"list-of-numbers": `[1, 2]`,
		"object":          `{"a": 1, "b": [true, null]}`,
		"number":          `3.5`,
		"boolean":         `true`,
		"null":            `null`,
		"string":          `"plain"`,
		"list-of-strings": `["a", "b"]`,
		"nested-vendor":   `[{"x": 1}]`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, mime := range []string{"application/json", "application/vnd.dataresource+json"} {
				src := `{"cells": [{"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "source": "JSON(x)",
				  "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
				    "data": {"text/plain": "<IPython.core.display.JSON object>", "` + mime + `": ` + value + `}},
				   {"output_type": "display_data", "metadata": {}, "data": {"` + mime + `": ` + value + `}}]}],
				 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
				for _, parse := range []func([]byte) (*Notebook, error){
					func(b []byte) (*Notebook, error) { return Parse(b, Limits{}) },
					ParseStored,
					func(b []byte) (*Notebook, error) { return parse(b, Limits{}, false) },
				} {
					nb, err := parse([]byte(src))
					if err != nil {
						t.Fatalf("%s %s: refused: %v", mime, value, err)
					}
					out, err := Encode(nb)
					if err != nil {
						t.Fatalf("encode: %v", err)
					}
					var back struct {
						Cells []struct {
							Outputs []struct {
								Data map[string]json.RawMessage `json:"data"`
							} `json:"outputs"`
						} `json:"cells"`
					}
					if err := json.Unmarshal(out, &back); err != nil {
						t.Fatalf("encoded notebook: %v\n%s", err, out)
					}
					for i, o := range back.Cells[0].Outputs {
						if got, want := compact(t, o.Data[mime]), compact(t, json.RawMessage(value)); got != want {
							t.Errorf("%s output %d: written back as %s, want %s", mime, i, got, want)
						}
					}
					if got := compact(t, back.Cells[0].Outputs[0].Data["text/plain"]); got != `["\u003cIPython.core.display.JSON object\u003e"]` {
						t.Errorf("text/plain written back as %s", got)
					}
				}
			}
		})
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
