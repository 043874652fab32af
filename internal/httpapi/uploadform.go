package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"unsafe"
)

// uploadForm is what POST /api/v1/submissions carries.
type uploadForm struct {
	exercise string
	// cohort is the slug of the cohort submitted in ("": intake decides).
	cohort   string
	notebook []byte // nil: no "notebook" file part
}

// errNotebookTooLarge: the notebook part alone is over the limit.
var errNotebookTooLarge = errors.New("notebook too large")

// formOverhead is how far past the notebook limit a form's body may go
// (its other fields, headers and boundaries).
const formOverhead = 64 << 10

// readUploadForm reads the multipart body: the "exercise" field (at most
// maxParamBytes) and the first "notebook" file part (at most max bytes).
// Other parts are skipped. r.Body is already capped by
// http.MaxBytesReader at max+formOverhead (its error comes back as is).
//
// The body is read whole into one buffer sized from its length, and a
// form shaped as HTTP clients send it is cut by fastForm, the notebook
// left in place (no copy); any other goes through mime/multipart over the
// same bytes, which found its boundaries 4 KB at a time with a backwards
// byte loop that was half the CPU of reading an upload.
// ParseMultipartForm, before either, spilled a notebook over 1 MiB to a
// temporary file and read it back.
func readUploadForm(r *http.Request, max int64) (uploadForm, error) {
	var f uploadForm
	boundary, err := formBoundary(r)
	if err != nil {
		return f, err
	}
	body, err := readAtMost(r.Body, max+formOverhead, r.ContentLength)
	if err != nil {
		return f, err
	}
	f, ok, err := fastForm(body, boundary, max)
	if !ok {
		f, err = slowForm(bytes.NewReader(body), boundary, max, int64(len(body)))
	}
	if err == nil && f.exercise == "" {
		f.exercise = r.URL.Query().Get("exercise")
	}
	if err == nil && f.cohort == "" {
		f.cohort = r.URL.Query().Get("cohort")
	}
	return f, err
}

// formBoundary is the boundary of a multipart/form-data request, with
// r.MultipartReader's errors.
func formBoundary(r *http.Request) (string, error) {
	v := r.Header.Get("Content-Type")
	if v == "" {
		return "", http.ErrNotMultipart
	}
	if r.Body == nil {
		return "", errors.New("missing form body")
	}
	d, params, err := mime.ParseMediaType(v)
	if err != nil || d != "multipart/form-data" {
		return "", http.ErrNotMultipart
	}
	boundary, ok := params["boundary"]
	if !ok {
		return "", http.ErrMissingBoundary
	}
	return boundary, nil
}

// slowForm reads the form with mime/multipart.
func slowForm(body io.Reader, boundary string, max, hint int64) (uploadForm, error) {
	var f uploadForm
	mr := multipart.NewReader(body, boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, err
		}
		switch f.wants(p.FormName(), p.FileName() != "") {
		case notebookPart:
			if f.notebook, err = readAtMost(p, max, hint); err != nil {
				return f, err
			}
		case exercisePart:
			b, err := readAtMost(p, maxParamBytes, -1)
			if err != nil {
				return f, exerciseErr(err)
			}
			f.exercise = string(b)
		case cohortPart:
			b, err := readAtMost(p, maxParamBytes, -1)
			if err != nil {
				return f, exerciseErr(err)
			}
			f.cohort = string(b)
		default:
			if _, err := io.Copy(io.Discard, p); err != nil {
				return f, err
			}
		}
	}
}

// partUse is what the form keeps of a part.
type partUse int

const (
	skipPart partUse = iota
	notebookPart
	exercisePart
	cohortPart
)

// wants: the first notebook file and the first non-empty exercise field
// are kept, other parts skipped.
func (f *uploadForm) wants(name string, file bool) partUse {
	switch {
	case name == "notebook" && file && f.notebook == nil:
		return notebookPart
	case name == "exercise" && !file && f.exercise == "":
		return exercisePart
	case name == "cohort" && !file && f.cohort == "":
		return cohortPart
	}
	return skipPart
}

// exerciseErr words a too-long exercise field.
func exerciseErr(err error) error {
	if errors.Is(err, errNotebookTooLarge) {
		return fmt.Errorf("the field \"exercise\" is longer than %d bytes", maxParamBytes)
	}
	return err
}

// Bounds of the forms fastForm cuts; others go to mime/multipart.
const (
	fastMaxParts  = 32
	fastMaxHeader = 4 << 10
)

// fastForm cuts a form held in memory when it has the shape HTTP clients
// send: no preamble, CRLF lines, each part's headers simple "Name: value"
// lines in ASCII (no continuation, no Content-Transfer-Encoding, one
// Content-Disposition), each part's content ending at the first CRLF
// "--boundary" after it, followed by CRLF or by "--" and the end of the
// body (an optional CRLF). Its result is then what mime/multipart would
// give (FuzzFastForm checks it); ok is false for any other form. The
// notebook is a slice of body.
func fastForm(body []byte, boundary string, max int64) (f uploadForm, ok bool, err error) {
	rest, found := bytes.CutPrefix(body, []byte("--"+boundary+"\r\n"))
	if !found || boundary == "" {
		return f, false, nil
	}
	sep := []byte("\r\n--" + boundary)
	for parts := 0; parts < fastMaxParts; parts++ {
		end := bytes.Index(rest, []byte("\r\n\r\n"))
		if end <= 0 || end > fastMaxHeader {
			return f, false, nil
		}
		name, file, ok := fastPartHeader(rest[:end])
		if !ok {
			return f, false, nil
		}
		rest = rest[end+4:]
		i := bytes.Index(rest, sep)
		if i < 0 || bytes.HasPrefix(rest, sep[2:]) { // mime/multipart ends a part that starts with "--boundary" at once
			return f, false, nil
		}
		content := rest[:i:i]
		rest = rest[i+len(sep):]
		last := false
		switch {
		case bytes.HasPrefix(rest, []byte("\r\n")):
			rest = rest[2:]
		case string(rest) == "--" || string(rest) == "--\r\n":
			last = true
		default:
			return f, false, nil
		}
		switch f.wants(name, file) {
		case notebookPart:
			if int64(len(content)) > max {
				return f, true, errNotebookTooLarge
			}
			f.notebook = content
		case exercisePart:
			if len(content) > maxParamBytes {
				return f, true, exerciseErr(errNotebookTooLarge)
			}
			f.exercise = string(content)
		case cohortPart:
			if len(content) > maxParamBytes {
				return f, true, exerciseErr(errNotebookTooLarge)
			}
			f.cohort = string(content)
		}
		if last {
			return f, true, nil
		}
	}
	return f, false, nil
}

// fastPartHeader reads a part's header block as fastForm accepts it: the
// form name and whether a file name is given, as multipart.Part's
// FormName and FileName would say.
func fastPartHeader(block []byte) (name string, file, ok bool) {
	seen := false
	for len(block) > 0 {
		line, next, _ := bytes.Cut(block, []byte("\r\n"))
		block = next
		k, v, found := bytes.Cut(line, []byte(":"))
		if !found || len(k) == 0 {
			return "", false, false
		}
		for _, c := range line {
			if c < 0x20 && c != '\t' || c >= 0x7f {
				return "", false, false
			}
		}
		for _, c := range k {
			if !isTokenByte(c) {
				return "", false, false
			}
		}
		switch textproto.CanonicalMIMEHeaderKey(string(k)) {
		case "Content-Transfer-Encoding":
			return "", false, false
		case "Content-Disposition":
			if seen {
				return "", false, false
			}
			seen = true
			d, params, err := mime.ParseMediaType(string(bytes.Trim(v, " \t")))
			if err != nil {
				continue // multipart.Part: no name, no file name
			}
			if d == "form-data" {
				name = params["name"]
			}
			file = params["filename"] != ""
		}
	}
	return name, file, true
}

// isTokenByte: c may appear in a header name (RFC 9110 tchar).
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// noZero is an empty slice with room for n bytes, allocated without
// zeroing them first (strings.Builder's Grow does that): make zeroed the
// body buffer, as large as the upload, only for Read to overwrite it.
// Its bytes past its length are old memory, never read: readAtMost
// returns only what Read wrote.
func noZero(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), n)[:0]
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
	buf := noZero(int(size))
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
