package httpapi_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestUploadFormStreamed: the upload form is read in one pass, in any
// part order; a notebook over the limit is 413, a field or part that is
// not what the form needs is a 422 problem, and extra parts are skipped.
func TestUploadFormStreamed(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			nb := starterOf(t, "ch1")
			type part struct{ name, file, body string }
			send := func(parts ...part) (int, string) {
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				for _, p := range parts {
					if p.file != "" {
						w, _ := mw.CreateFormFile(p.name, p.file)
						_, _ = w.Write([]byte(p.body))
					} else {
						_ = mw.WriteField(p.name, p.body)
					}
				}
				_ = mw.Close()
				req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", &body)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				req.Header.Set("Authorization", "Bearer "+ada)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, tc := range []struct {
				name  string
				parts []part
				want  int
				says  string
			}{
				{"notebook first", []part{{"notebook", "a.ipynb", string(nb)}, {"exercise", "", "ch1"}}, 202, `"exercise":"ch1"`},
				{"extra parts", []part{{"note", "", "hi"}, {"exercise", "", "ch1"}, {"other", "x.bin", "zz"}, {"notebook", "a.ipynb", string(nb)}}, 202, `"exercise":"ch1"`},
				{"notebook not a file", []part{{"exercise", "", "ch1"}, {"notebook", "", string(nb)}}, 422, `the form file \"notebook\" is required`},
				{"no exercise", []part{{"notebook", "a.ipynb", string(nb)}}, 422, `the form field \"exercise\" is required`},
				{"long exercise", []part{{"exercise", "", strings.Repeat("x", 300)}, {"notebook", "a.ipynb", string(nb)}}, 422, "longer than"},
				{"notebook over 8 MiB", []part{{"exercise", "", "ch1"}, {"notebook", "a.ipynb", strings.Repeat(" ", 8<<20+1)}}, 413, "larger than"},
			} {
				if st, body := send(tc.parts...); st != tc.want || !strings.Contains(body, tc.says) {
					t.Errorf("%s: %d %s, want %d saying %q", tc.name, st, body, tc.want, tc.says)
				}
			}
		})
	}
}
