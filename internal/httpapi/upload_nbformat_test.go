package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestUploadAsJupyterReadsIt: a 4.5 notebook whose cells have no ids (what
// the learning hub publishes; nbformat fills them in on read) and with an
// input() prompt recorded as a stdin stream is accepted, as Jupyter
// accepts it.
func TestUploadAsJupyterReadsIt(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../exercises/ch1/01.05_chapter_practice.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(raw, &nb); err != nil {
		t.Fatal(err)
	}
	nb["nbformat_minor"] = 5
	added := false
	for _, c := range nb["cells"].([]any) {
		cell := c.(map[string]any)
		delete(cell, "id")
		if cell["cell_type"] == "code" && !added {
			cell["outputs"] = []any{map[string]any{"output_type": "stream", "name": "stdin", "text": "your name? "}}
			added = true
		}
	}
	upload, _ := json.Marshal(nb)
	uploadAccepted(t, upload, "upload without cell ids and with a stdin output")
}

// TestUploadJSONOutputsOfAnyType: outputs whose application/json value is
// a list of numbers (IPython.display.JSON([1, 2])), a number, a boolean,
// null or an object are accepted, as nbformat's schema allows any JSON
// value for a JSON mimetype.
func TestUploadJSONOutputsOfAnyType(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../exercises/ch1/01.05_chapter_practice.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(raw, &nb); err != nil {
		t.Fatal(err)
	}
	var outputs []any
	for _, v := range []any{[]any{1, 2}, 3.5, true, nil, map[string]any{"a": 1}} {
		outputs = append(outputs, map[string]any{"output_type": "display_data", "metadata": map[string]any{},
			"data": map[string]any{"application/json": v, "text/plain": "<IPython.core.display.JSON object>"}})
	}
	for _, c := range nb["cells"].([]any) {
		if cell := c.(map[string]any); cell["cell_type"] == "code" {
			cell["outputs"] = outputs
			break
		}
	}
	upload, _ := json.Marshal(nb)
	uploadAccepted(t, upload, "upload with JSON outputs")
}

// uploadAccepted uploads a ch1 notebook as a learner on every database and
// fails unless it is accepted.
func uploadAccepted(t *testing.T, upload []byte, what string) {
	t.Helper()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok := e.token(t, "ada", domain.RoleLearner)
			body, ct := multipartBody(upload)
			req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode/100 != 2 {
				t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
			}
		})
	}
}
