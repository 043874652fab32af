package store

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/domain"
)

// textMark starts a stored string that was escaped. Postgres TEXT holds
// neither NUL nor invalid UTF-8, and learner programs print both: such a
// string is stored as textMark + strconv.Quote(s), which is ASCII and
// reverses exactly. A string that happens to start with textMark is
// escaped too, so reading back is never ambiguous.
const textMark = "\x1bnpugrade-quoted:"

// lossless is a TEXT column that round-trips any Go string, whatever
// bytes it holds, on both databases.
type lossless string

// Value implements driver.Valuer.
func (t lossless) Value() (driver.Value, error) { return escapeText(string(t)), nil }

// Scan implements sql.Scanner.
func (t *lossless) Scan(v any) error {
	var s string
	switch x := v.(type) {
	case nil:
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return fmt.Errorf("scan %T into a text column", v)
	}
	u, err := unescapeText(s)
	*t = lossless(u)
	return err
}

func escapeText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.HasPrefix(s, textMark) {
		return s
	}
	return textMark + strconv.Quote(s)
}

func unescapeText(s string) (string, error) {
	q, ok := strings.CutPrefix(s, textMark)
	if !ok {
		return s, nil
	}
	u, err := strconv.Unquote(q)
	if err != nil {
		return s, fmt.Errorf("stored text %.40q is not a quoted string: %w", s, err)
	}
	return u, nil
}

// Printable is domain.Printable (the store keeps free text from runners
// in that form).
func Printable(s string) string { return domain.Printable(s) }
