package httpapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"testing"
)

// formOf builds a multipart body: parts given as name, file name ("" for
// a field) and content.
func formOf(boundary string, parts ...[3]string) []byte {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.SetBoundary(boundary)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p[1] != "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p[0], p[1]))
			h.Set("Content-Type", "application/octet-stream")
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p[0]))
		}
		w, _ := mw.CreatePart(h)
		_, _ = w.Write([]byte(p[2]))
	}
	_ = mw.Close()
	return b.Bytes()
}

// TestFastFormCutsClientForms: forms as clients write them are cut by
// fastForm (the notebook left in the body) with mime/multipart's result.
func TestFastFormCutsClientForms(t *testing.T) {
	t.Parallel()
	const bd = "b0undary"
	for _, tc := range []struct {
		name     string
		body     []byte
		exercise string
		notebook string // "-": none
		err      bool
	}{
		{"plain", formOf(bd, [3]string{"exercise", "", "ch1"}, [3]string{"notebook", "a.ipynb", `{"cells":[]}`}), "ch1", `{"cells":[]}`, false},
		{"notebook first, extra parts", formOf(bd, [3]string{"notebook", "a.ipynb", "N1"}, [3]string{"x", "", "y"}, [3]string{"notebook", "b.ipynb", "N2"}, [3]string{"exercise", "", "ch2"}), "ch2", "N1", false},
		{"notebook without file name is a field", formOf(bd, [3]string{"notebook", "", "N"}, [3]string{"exercise", "", "e"}), "e", "-", false},
		{"boundary-like text inside", formOf(bd, [3]string{"notebook", "a", "x\r\n--b0undaryX y\r\n--b0undar"}), "", "x\r\n--b0undaryX y\r\n--b0undar", false},
		{"empty notebook", formOf(bd, [3]string{"notebook", "a", ""}), "", "", false},
		{"notebook too large", formOf(bd, [3]string{"notebook", "a", string(bytes.Repeat([]byte("x"), 101))}), "", "-", true},
		{"exercise too long", formOf(bd, [3]string{"exercise", "", string(bytes.Repeat([]byte("e"), maxParamBytes+1))}), "", "-", true},
	} {
		fast, ok, ferr := fastForm(tc.body, bd, 100)
		slow, serr := slowForm(bytes.NewReader(tc.body), bd, 100, int64(len(tc.body)))
		if tc.name != "boundary-like text inside" && !ok {
			t.Errorf("%s: fastForm did not cut it", tc.name)
			continue
		}
		if !ok {
			fast, ferr = slow, serr
		}
		if (ferr != nil) != tc.err || (serr != nil) != tc.err {
			t.Errorf("%s: errors %v (fast), %v (slow); want an error: %v", tc.name, ferr, serr, tc.err)
		}
		if tc.err {
			continue
		}
		nb := "-"
		if fast.notebook != nil {
			nb = string(fast.notebook)
		}
		if fast.exercise != tc.exercise || nb != tc.notebook || !sameForm(fast, slow) {
			t.Errorf("%s: fast %q %q, slow %q %q; want %q %q", tc.name, fast.exercise, fast.notebook, slow.exercise, slow.notebook, tc.exercise, tc.notebook)
		}
		if ok && fast.notebook != nil && len(fast.notebook) > 0 && &fast.notebook[0] != &tc.body[bytes.Index(tc.body, fast.notebook)] {
			t.Errorf("%s: the notebook was copied", tc.name)
		}
	}
}

func sameForm(a, b uploadForm) bool {
	return a.exercise == b.exercise && (a.notebook == nil) == (b.notebook == nil) && bytes.Equal(a.notebook, b.notebook)
}

// FuzzFastForm: whenever fastForm cuts a body, mime/multipart reads the
// same exercise, the same notebook (or none) and fails alike.
func FuzzFastForm(f *testing.F) {
	const bd = "XyZ"
	f.Add(formOf(bd, [3]string{"exercise", "", "ch1"}, [3]string{"notebook", "a.ipynb", `{"cells":[]}`}))
	f.Add(formOf(bd, [3]string{"notebook", "a", "x\r\n--XyZ\r\ny"}, [3]string{"exercise", "", ""}, [3]string{"exercise", "", "e2"}))
	f.Add(formOf(bd, [3]string{"notebook", "a", string(bytes.Repeat([]byte("n"), 70))}, [3]string{"notebook", "b", "second"}))
	f.Add([]byte("--XyZ\r\nContent-Disposition: form-data; name=\"notebook\"; filename=\"a\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nA=3DB\r\n--XyZ--\r\n"))
	f.Add([]byte("--XyZ\r\nContent-Disposition: form-data; name=notebook; filename=a\r\n content: folded\r\n\r\nA\r\n--XyZ--"))
	f.Add([]byte("--XyZ\r\ncontent-disposition:form-data;name=\"exercise\"\r\n\r\nch1\r\n--XyZ--\r\nepilogue"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok, ferr := fastForm(body, bd, 64)
		if !ok {
			return
		}
		slow, serr := slowForm(bytes.NewReader(body), bd, 64, int64(len(body)))
		if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
			t.Fatalf("errors differ: fast %v, slow %v", ferr, serr)
		}
		if ferr == nil && !sameForm(fast, slow) {
			t.Fatalf("fast %q %q, slow %q %q", fast.exercise, fast.notebook, slow.exercise, slow.notebook)
		}
	})
}
