package httpapi

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"
)

// TestReadAtMost: whatever the length hint (none, short, exact, long,
// past the limit) and however the reader splits its bytes, a part of up
// to max bytes comes back whole and one byte more is errNotebookTooLarge;
// with a hint of at least the part's length the buffer is allocated once.
func TestReadAtMost(t *testing.T) {
	t.Parallel()
	const max = 1000
	for _, size := range []int{0, 1, 511, 512, 513, 999, 1000, 1001, 5000} {
		data := bytes.Repeat([]byte("x"), size)
		for _, hint := range []int64{-1, 0, 10, int64(size), int64(size) + 200, max, max + 1, 1 << 20} {
			for _, half := range []bool{false, true} {
				r := bytes.NewReader(data)
				got, err := func() ([]byte, error) {
					if half {
						return readAtMost(iotest.HalfReader(r), max, hint)
					}
					return readAtMost(r, max, hint)
				}()
				if size > max {
					if !errors.Is(err, errNotebookTooLarge) {
						t.Errorf("size %d hint %d: err %v, want errNotebookTooLarge", size, hint, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, data) || got == nil {
					t.Errorf("size %d hint %d half %v: %d bytes, %v", size, hint, half, len(got), err)
				}
				if hint > 0 && hint >= int64(size) && cap(got) != int(min(hint, max)+1) {
					t.Errorf("size %d hint %d: buffer grew to %d", size, hint, cap(got))
				}
			}
		}
	}
	if _, err := readAtMost(iotest.ErrReader(errors.New("boom")), max, 10); err == nil || err.Error() != "boom" {
		t.Errorf("a failing reader: %v", err)
	}
}
