package notebook

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// NbgraderMeta is metadata.nbgrader (nbgrader schema version 3).
type NbgraderMeta struct {
	SchemaVersion int      `json:"schema_version"`
	Grade         bool     `json:"grade"`
	Solution      bool     `json:"solution"`
	Locked        bool     `json:"locked"`
	Task          bool     `json:"task"`
	GradeID       string   `json:"grade_id"`
	Points        *float64 `json:"points"`
	Sum           string   `json:"checksum"`
	// CellType is the cell type nbgrader recorded when it generated the
	// cell, so a changed cell type can be caught.
	CellType string `json:"cell_type"`
}

// Checksum is nbgrader's compute_checksum of c: MD5 over the source, the
// cell type, str(is_grade), str(is_solution), str(is_locked), the grade id
// and, for grade cells, str(float(points)), spelled as Python spells them.
func (m NbgraderMeta) Checksum(c *Cell) string {
	h := md5.New()
	locked := m.Locked
	if m.Solution {
		locked = false
	} else if m.Grade {
		locked = true
	}
	h.Write([]byte(string(c.Source)))
	h.Write([]byte(c.CellType))
	h.Write([]byte(pyBool(m.Grade)))
	h.Write([]byte(pyBool(m.Solution)))
	h.Write([]byte(pyBool(locked)))
	h.Write([]byte(m.GradeID))
	if m.Grade {
		p := 0.0
		if m.Points != nil {
			p = *m.Points
		}
		h.Write([]byte(PyFloat(p)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// PyFloat is Python's str(float): shortest repr, ".0" on integral values,
// exponent form below 1e-4 and from 1e16.
func PyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-05 in Python, 1e-05 here
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// Nbgrader returns the cell's metadata.nbgrader; ok is false when it has
// none or it does not decode.
func (c *Cell) Nbgrader() (m NbgraderMeta, ok bool) {
	raw, has := c.Metadata["nbgrader"]
	if !has || json.Unmarshal(raw, &m) != nil {
		return NbgraderMeta{}, false
	}
	return m, true
}
