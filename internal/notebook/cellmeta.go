package notebook

import (
	"encoding/json"

	"github.com/npugrade/npugrade/internal/domain"
)

// CellMetaKey is the cell metadata key under which the executor notes how
// a cell ran (domain.CellMeta) for the grader.
const CellMetaKey = "npugrade"

// ReadCellMeta returns the executor's notes on c.
func ReadCellMeta(c *Cell) domain.CellMeta {
	var m domain.CellMeta
	if raw, ok := c.Metadata[CellMetaKey]; ok {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// WriteCellMeta replaces the executor's notes on c.
func WriteCellMeta(c *Cell, m domain.CellMeta) {
	b, _ := json.Marshal(m)
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	c.Metadata[CellMetaKey] = b
}
