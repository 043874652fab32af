package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// uploadForm is what POST /api/v1/submissions carries.
type uploadForm struct {
	exercise string
	notebook []byte // nil: no "notebook" file part
}

// errNotebookTooLarge: the notebook part alone is over the limit.
var errNotebookTooLarge = errors.New("notebook too large")

// readUploadForm streams the multipart body once: the "exercise" field
// (at most maxParamBytes) and the first "notebook" file part (at most max
// bytes) into one buffer. ParseMultipartForm used to spill a notebook
// over 1 MiB to a temporary file and read it back, which was most of the
// time a refused upload took. Other parts are skipped. r.Body is already
// capped by http.MaxBytesReader (its error comes back as is).
func readUploadForm(r *http.Request, max int64) (uploadForm, error) {
	var f uploadForm
	mr, err := r.MultipartReader()
	if err != nil {
		return f, err
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f, err
		}
		switch {
		case p.FormName() == "notebook" && p.FileName() != "" && f.notebook == nil:
			if f.notebook, err = readAtMost(p, max, r.ContentLength); err != nil {
				return f, err
			}
		case p.FormName() == "exercise" && p.FileName() == "" && f.exercise == "":
			b, err := readAtMost(p, maxParamBytes, -1)
			if errors.Is(err, errNotebookTooLarge) {
				return f, fmt.Errorf("the field \"exercise\" is longer than %d bytes", maxParamBytes)
			}
			if err != nil {
				return f, err
			}
			f.exercise = string(b)
		default:
			if _, err := io.Copy(io.Discard, p); err != nil {
				return f, err
			}
		}
	}
	if f.exercise == "" {
		f.exercise = r.URL.Query().Get("exercise")
	}
	return f, nil
}

// readAtMost reads all of rd into one buffer, failing with
// errNotebookTooLarge past max bytes. hint (the request's length, when
// known) sizes the buffer once: a part is shorter than its request, so
// the buffer never grows and the upload is copied once (bytes.Buffer's
// ReadFrom doubled it when fewer than 512 bytes were left, a second copy
// and twice the memory).
func readAtMost(rd io.Reader, max, hint int64) ([]byte, error) {
	size := int64(512)
	if hint > 0 {
		size = min(hint, max) + 1 // + 1: room to see the end without growing
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, errNotebookTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
