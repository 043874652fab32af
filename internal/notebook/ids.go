package notebook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// hasIDs reports whether the notebook is one whose cells carry ids: it
// declares nbformat 4.5 or later, or some cell has an id anyway (a 4.0–4.4
// notebook that a tool gave ids without raising its minor version).
func (nb *Notebook) hasIDs() bool {
	if nb.NBFormatMinor >= 5 {
		return true
	}
	for _, c := range nb.Cells {
		if c != nil && c.ID != "" {
			return true
		}
	}
	return false
}

// AssignIDs gives every cell without an id one, as nbformat does when it
// reads a 4.5 notebook, and returns them by cell index. nbformat draws
// random ids; ours are derived from the cell's position, type and source
// ("cell-" and 8 hex digits), so importing the same notebook twice gives
// the same ids, and they never collide with an id already there.
func (nb *Notebook) AssignIDs() map[int]string {
	missing := false
	for _, c := range nb.Cells {
		missing = missing || (c != nil && c.ID == "")
	}
	if !missing {
		return map[int]string{} // the usual 4.5 notebook: nothing to index
	}
	used := map[string]bool{}
	for _, c := range nb.Cells {
		if c != nil && c.ID != "" {
			used[c.ID] = true
		}
	}
	assigned := map[int]string{}
	for i, c := range nb.Cells {
		if c == nil || c.ID != "" {
			continue
		}
		sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", i, c.CellType, c.Source)))
		id := "cell-" + hex.EncodeToString(sum[:4])
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("cell-%s-%d", hex.EncodeToString(sum[:4]), n)
		}
		used[id] = true
		c.ID = id
		assigned[i] = id
	}
	return assigned
}

// setDocID sets the id of cell i in a generically decoded notebook.
func setDocID(doc any, i int, id string) {
	top, _ := doc.(map[string]any)
	cells, _ := top["cells"].([]any)
	if i < len(cells) {
		if cell, ok := cells[i].(map[string]any); ok {
			cell["id"] = id
		}
	}
}

// declareMinor makes the declared nbformat minor match the content: cells
// with ids need 4.5, and then every cell needs one.
func (nb *Notebook) declareMinor() {
	if nb.NBFormat == 4 && nb.NBFormatMinor < 5 && nb.hasIDs() {
		nb.AssignIDs()
		nb.NBFormatMinor = 5
	}
}

// fillDocDefaults gives the generic form what Encode always writes and
// nbformat's own readers never miss — notebook and cell metadata, a code
// cell's outputs and execution_count — and the minor version it is checked
// as, so the schema judges what the notebook becomes, not how terse the
// tool that wrote it was.
func fillDocDefaults(doc any, minor int) {
	top, ok := doc.(map[string]any)
	if !ok {
		return
	}
	if _, ok := top["metadata"]; !ok {
		top["metadata"] = map[string]any{}
	}
	if _, ok := top["nbformat_minor"]; ok && minor == 5 {
		top["nbformat_minor"] = 5 // ids present: checked as the 4.5 it is declared as on Encode
	}
	cells, _ := top["cells"].([]any)
	for _, raw := range cells {
		if cell, ok := raw.(map[string]any); ok {
			fillCellDefaults(cell)
		}
	}
}

// fillCellDefaults is fillDocDefaults for one cell.
func fillCellDefaults(cell map[string]any) {
	if _, ok := cell["metadata"]; !ok {
		cell["metadata"] = map[string]any{}
	}
	if cell["cell_type"] != "code" {
		return
	}
	if _, ok := cell["outputs"]; !ok {
		cell["outputs"] = []any{}
	}
	if _, ok := cell["execution_count"]; !ok {
		cell["execution_count"] = nil
	}
}
