package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestUploadMalformed: every malformed upload is refused with a 4xx
// problem+json naming its problems, and the server keeps serving.
func TestUploadMalformed(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			s := startServer(t, dbURL, "--local-runner", "0")
			defer s.stop()
			valid := `{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[]}`
			cases := []struct {
				name     string
				exercise string
				body     []byte
				status   int
				want     []string // substrings of the problems
			}{
				{"not JSON", "ch1", []byte("this is not a notebook"), 422, []string{"not valid JSON"}},
				{"nbformat 3", "ch1", []byte(`{"nbformat":3,"nbformat_minor":0,"worksheets":[]}`), 422, []string{"nbformat 3 is not supported", `no "cells" list`}},
				{"deeply nested", "ch1", []byte(strings.Repeat("[", 200000) + strings.Repeat("]", 200000)), 422, []string{"nested deeper than"}},
				{"50 MB", "ch1", bytes.Repeat([]byte("x"), 50<<20), 413, nil},
				{"invalid UTF-8", "ch1", []byte("{\"nbformat\":4,\"nbformat_minor\":4,\"cells\":[],\"metadata\":{\"x\":\"\xff\xfe\"}}"), 422, []string{"UTF-8"}},
				{"unknown exercise", "ch99", []byte(valid), 422, []string{`unknown exercise "ch99"`}},
				{"unknown exercise and broken notebook", "ch99", []byte(`{"nbformat":4,"nbformat_minor":4,"cells":[{"cell_type":"heading"}]}`), 422,
					[]string{`unknown exercise "ch99"`, `unknown cell_type "heading"`}},
				{"bad attachment", "ch1", []byte(`{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[{"cell_type":"markdown","source":"x","metadata":{},"attachments":{"a.png":{"image/png":"!!"}}}]}`), 422,
					[]string{"not valid base64"}},
				{"too many cells", "ch1", []byte(`{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[` + strings.Repeat(`{"cell_type":"raw","source":"","metadata":{}},`, 2000) + `{"cell_type":"raw","source":"","metadata":{}}]}`), 422,
					[]string{"more than 2000 cells, the limit is 2000"}},
			}
			for _, tc := range cases {
				resp, p := upload(t, s, ada, tc.exercise, tc.body, "")
				if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s: %d %s %v, want %d problem+json", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), p, tc.status)
				}
				all := fmt.Sprint(p["problems"], " ", p["detail"], " ", p["title"])
				for _, w := range tc.want {
					if !strings.Contains(all, w) {
						t.Errorf("%s: problems %s lack %q", tc.name, all, w)
					}
				}
				if resp, _ := request(t, "GET", s.url+"/healthz", "", nil, "", nil); resp.StatusCode != 200 {
					t.Fatalf("after %s the server does not serve: %d", tc.name, resp.StatusCode)
				}
			}
			// A good upload still goes through.
			starter := readFile(t, repoRoot+"/exercises/ch1/01.05_chapter_practice.ipynb")
			if resp, sub := upload(t, s, ada, "ch1", starter, ""); resp.StatusCode != 202 {
				t.Fatalf("valid upload after the malformed ones: %d %v", resp.StatusCode, sub)
			}
		})
	}
}
