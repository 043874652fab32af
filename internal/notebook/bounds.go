package notebook

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/go-multierror"
)

// MaxProblems bounds the problems one notebook's validation lists; the
// rest are counted ("… and N more"). A hostile upload of a million bad
// cells then costs a short answer, not a 266 MB one.
const MaxProblems = 100

// DefaultMaxValues bounds the JSON values (objects, arrays, strings,
// numbers, literals) of a notebook. Decoding costs memory per value, far
// more than its bytes: 8 MiB of "{}," is 2.8 million objects. The
// tutorial's notebooks, outputs included, hold a few thousand.
const DefaultMaxValues = 200_000

// prescan walks the raw bytes once, before anything is decoded, and
// refuses what would make decoding expensive: nesting deeper than
// lim.MaxDepth, more than lim.MaxValues values, or more than lim.MaxCells
// cells in the top-level "cells" list. It does not check the syntax (the
// decoder does); it only counts.
func prescan(data []byte, lim Limits) error {
	var (
		depth, values, cells int
		lastKey              string // the last string at depth 1: the key of the value that follows
		inCells, cellStarted bool
	)
	for i := 0; i < len(data); i++ {
		ch := data[i]
		switch ch {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case '}', ']':
			depth--
			if depth == 1 {
				inCells = false
			}
			continue
		case ',':
			if inCells && depth == 2 {
				cellStarted = false
			}
			continue
		}
		// The start of a value (or of a key, counted as one).
		if values++; values > lim.MaxValues {
			return fmt.Errorf("notebook has more than %d JSON values, the limit is %d (clear its outputs)", lim.MaxValues, lim.MaxValues)
		}
		if inCells && depth == 2 && !cellStarted {
			cellStarted = true
			if cells++; cells > lim.MaxCells {
				return fmt.Errorf("notebook has more than %d cells, the limit is %d", lim.MaxCells, lim.MaxCells)
			}
		}
		switch ch {
		case '"':
			end := stringEnd(data, i+1)
			if end < 0 {
				return nil // unterminated: the decoder says so
			}
			if depth == 1 {
				lastKey = string(data[i+1 : end])
			}
			i = end
		case '{', '[':
			depth++
			if depth > lim.MaxDepth {
				return fmt.Errorf("notebook JSON is nested deeper than %d levels", lim.MaxDepth)
			}
			if ch == '[' && depth == 2 && lastKey == "cells" {
				inCells, cellStarted = true, false
			}
		default:
			// A number or literal: skip to its end.
			for i+1 < len(data) && !isJSONDelim(data[i+1]) {
				i++
			}
		}
	}
	return nil
}

// stringEnd returns the index of the quote that ends the JSON string
// whose contents start at data[j] (the first quote not escaped), or -1.
// Most of an upload's bytes are in strings: it finds quotes and
// backslashes with IndexByte instead of stepping through every byte.
func stringEnd(data []byte, j int) int {
	q := -1 // the next quote at or after j
	for j < len(data) {
		if q < j {
			k := bytes.IndexByte(data[j:], '"')
			if k < 0 {
				return -1
			}
			q = j + k
		}
		b := bytes.IndexByte(data[j:q], '\\')
		if b < 0 {
			return q
		}
		j += b + 2 // past the backslash and the byte it escapes (perhaps q)
	}
	return -1
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', ':', '"', '{', '[':
		return true
	}
	return false
}

// problems collects a notebook's problems up to MaxProblems and counts
// the rest.
type problems struct {
	errs *multierror.Error
	more int
}

func (p *problems) add(err error) {
	if p.errs != nil && len(p.errs.Errors) >= MaxProblems {
		p.more++
		return
	}
	p.errs = multierror.Append(p.errs, err)
}

// count is every problem found, listed or not.
func (p *problems) count() int {
	if p.errs == nil {
		return p.more
	}
	return len(p.errs.Errors) + p.more
}

func (p *problems) err() error {
	if p.more > 0 {
		p.errs = multierror.Append(p.errs, fmt.Errorf("… and %d more problems", p.more))
	}
	return p.errs.ErrorOrNil()
}
