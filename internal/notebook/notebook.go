// Package notebook reads, validates and writes Jupyter notebooks (nbformat 4),
// and turns cell outputs into the plain form the comparators work on.
//
// It keeps unknown fields of the notebook intact where it can (metadata is
// held as raw JSON) so that a notebook rebuilt by the server still opens in
// Jupyter with everything the author put there.
package notebook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Notebook is an nbformat 4 notebook.
type Notebook struct {
	Cells         []*Cell                    `json:"cells"`
	Metadata      map[string]json.RawMessage `json:"metadata"`
	NBFormat      int                        `json:"nbformat"`
	NBFormatMinor int                        `json:"nbformat_minor"`
}

// Cell is one notebook cell. Source is always held as one string; on the
// wire nbformat allows a string or a list of strings.
type Cell struct {
	ID             string                     `json:"id,omitempty"`
	CellType       string                     `json:"cell_type"`
	Source         MultilineString            `json:"source"`
	Metadata       map[string]json.RawMessage `json:"metadata"`
	Outputs        []*Output                  `json:"outputs,omitempty"`
	ExecutionCount *int                       `json:"execution_count,omitempty"`
	Attachments    json.RawMessage            `json:"attachments,omitempty"`
}

// Output is one output of a code cell, as nbformat stores it.
type Output struct {
	OutputType     string          `json:"output_type"`
	Name           string          `json:"name,omitempty"`
	Text           MultilineString `json:"text,omitempty"`
	Data           MimeBundle      `json:"data,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	ExecutionCount *int            `json:"execution_count,omitempty"`
	Ename          string          `json:"ename,omitempty"`
	Evalue         string          `json:"evalue,omitempty"`
	Traceback      []string        `json:"traceback,omitempty"`
}

// Output types defined by nbformat 4.
const (
	OutputStream        = "stream"
	OutputExecuteResult = "execute_result"
	OutputDisplayData   = "display_data"
	OutputError         = "error"
)

// MultilineString is nbformat's "string or list of strings". It is decoded
// into one string and encoded as a list of lines, as Jupyter writes it.
type MultilineString string

// UnmarshalJSON accepts a string or a list of strings. An object is kept
// as its JSON text, for the schema to refuse where text is due.
func (m *MultilineString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		*m = MultilineString(b)
		return nil
	}
	if s, ok := joinLinesFast(b); ok {
		*m = MultilineString(s)
		return nil
	}
	if s, ok := unquoteFast(b); ok {
		*m = MultilineString(s)
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var parts []string
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		*m = MultilineString(strings.Join(parts, ""))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*m = MultilineString(s)
	return nil
}

// MarshalJSON writes the list-of-lines form.
func (m MultilineString) MarshalJSON() ([]byte, error) {
	s := string(m)
	if s == "" {
		return []byte("[]"), nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return json.Marshal(lines)
}

// MimeBundle is an output's data, by MIME type. A text type holds its
// text. A JSON type (application/json, application/*+json) holds its
// value's JSON: nbformat lets it be any JSON value (IPython.display.JSON
// records lists and numbers too), and it is written back as that value,
// never as text.
type MimeBundle map[string]MultilineString

// UnmarshalJSON keeps JSON types' values as JSON, the others as text.
func (b *MimeBundle) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(MimeBundle, len(raw))
	for k, v := range raw {
		if jsonMime(k) {
			out[k] = MultilineString(v)
			continue
		}
		var m MultilineString
		if err := m.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("data %q: %w", k, err)
		}
		out[k] = m
	}
	*b = out
	return nil
}

// MarshalJSON writes JSON types' values as JSON, the others as lines.
func (b MimeBundle) MarshalJSON() ([]byte, error) {
	out := make(map[string]json.RawMessage, len(b))
	for k, v := range b {
		if jsonMime(k) && json.Valid([]byte(v)) {
			out[k] = json.RawMessage(v)
			continue
		}
		enc, err := v.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out[k] = enc
	}
	return json.Marshal(out)
}

// String returns the text.
func (m MultilineString) String() string { return string(m) }

// MarshalJSON writes the keys nbformat requires for each cell type: code
// cells always carry "outputs" and "execution_count" (null when not run),
// other cells never do.
func (c *Cell) MarshalJSON() ([]byte, error) {
	meta := c.Metadata
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if c.CellType == "code" {
		outs := c.Outputs
		if outs == nil {
			outs = []*Output{}
		}
		return json.Marshal(struct {
			ID             string                     `json:"id,omitempty"`
			CellType       string                     `json:"cell_type"`
			ExecutionCount *int                       `json:"execution_count"`
			Metadata       map[string]json.RawMessage `json:"metadata"`
			Outputs        []*Output                  `json:"outputs"`
			Source         MultilineString            `json:"source"`
		}{c.ID, c.CellType, c.ExecutionCount, meta, outs, c.Source})
	}
	return json.Marshal(struct {
		ID          string                     `json:"id,omitempty"`
		CellType    string                     `json:"cell_type"`
		Metadata    map[string]json.RawMessage `json:"metadata"`
		Source      MultilineString            `json:"source"`
		Attachments json.RawMessage            `json:"attachments,omitempty"`
	}{c.ID, c.CellType, meta, c.Source, c.Attachments})
}

// MarshalJSON writes execute_result's required execution_count and data/metadata.
func (o *Output) MarshalJSON() ([]byte, error) {
	meta := o.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	switch o.OutputType {
	case OutputStream:
		return json.Marshal(struct {
			OutputType string          `json:"output_type"`
			Name       string          `json:"name"`
			Text       MultilineString `json:"text"`
		}{o.OutputType, o.Name, o.Text})
	case OutputExecuteResult:
		return json.Marshal(struct {
			OutputType     string          `json:"output_type"`
			ExecutionCount *int            `json:"execution_count"`
			Data           MimeBundle      `json:"data"`
			Metadata       json.RawMessage `json:"metadata"`
		}{o.OutputType, o.ExecutionCount, nonNilData(o.Data), meta})
	case OutputDisplayData:
		return json.Marshal(struct {
			OutputType string          `json:"output_type"`
			Data       MimeBundle      `json:"data"`
			Metadata   json.RawMessage `json:"metadata"`
		}{o.OutputType, nonNilData(o.Data), meta})
	case OutputError:
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		return json.Marshal(struct {
			OutputType string   `json:"output_type"`
			Ename      string   `json:"ename"`
			Evalue     string   `json:"evalue"`
			Traceback  []string `json:"traceback"`
		}{o.OutputType, o.Ename, o.Evalue, tb})
	}
	type plain Output
	return json.Marshal((*plain)(o))
}

func nonNilData(d MimeBundle) MimeBundle {
	if d == nil {
		return MimeBundle{}
	}
	return d
}
