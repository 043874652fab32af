package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestHostileUploadsCostABoundedAnswer: the notebooks that used to make
// the server list millions of problems (a 266 MB answer, gigabytes of
// memory) are refused with a short 422 whose problems are bounded; one
// with many bad cells lists MaxProblems and counts the rest.
func TestHostileUploadsCostABoundedAnswer(t *testing.T) {
	t.Parallel()
	uploads := hostileUploads()
	badCells := `{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [` +
		strings.TrimSuffix(strings.Repeat(`{"cell_type": "nonsense", "metadata": {}, "source": ""},`, 1500), ",") + `]}`
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok := e.token(t, "ada", domain.RoleLearner)
			post := func(nb []byte) (int, problem.Detail, int) {
				body, ct := multipartBody(nb)
				req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(body))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(resp.Body)
				var p problem.Detail
				_ = json.Unmarshal(buf.Bytes(), &p)
				return resp.StatusCode, p, buf.Len()
			}
			for _, name := range []string{"empty-cells", "bad-outputs", "wide-metadata", "numbers-array"} {
				st, p, n := post(uploads[name])
				if st != http.StatusUnprocessableEntity || n > 16<<10 || len(p.Problems) == 0 || len(p.Problems) > notebook.MaxProblems+1 {
					t.Errorf("%s: %d, %d byte answer, %d problems: %.300v", name, st, n, len(p.Problems), p.Problems)
				}
			}
			st, p, _ := post([]byte(badCells))
			if st != http.StatusUnprocessableEntity || len(p.Problems) != notebook.MaxProblems+1 ||
				!strings.Contains(p.Problems[len(p.Problems)-1], "and 1400 more problems") {
				t.Errorf("1500 bad cells: %d, %d problems, last %q", st, len(p.Problems), p.Problems[len(p.Problems)-1])
			}
		})
	}
}
