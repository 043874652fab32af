package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
)

// TestAcceptsNotebook: the notebook form only when Accept lists its
// media type with a q above 0.
func TestAcceptsNotebook(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]bool{
		"": false, "application/json": false, "*/*": false,
		"application/x-ipynb+json":                          true,
		"application/x-ipynb+json, application/json;q=0.5":  true,
		"application/json;q=0.5, APPLICATION/X-IPYNB+JSON ": true,
		"application/x-ipynb+json;q=0.2":                    true,
		"application/x-ipynb+json;q=0":                      false,
		"application/x-ipynb+json; q=bad":                   false,
		"application/x-ipynb+jsonx":                         false,
	} {
		if got := acceptsNotebook(accept); got != want {
			t.Errorf("acceptsNotebook(%q) = %v, want %v", accept, got, want)
		}
	}
}

// TestASCIIJSON: a lease with non-ASCII text becomes ASCII JSON that
// decodes to the same lease.
func TestASCIIJSON(t *testing.T) {
	t.Parallel()
	in := domain.Lease{JobID: 7, Token: "t", ExerciseID: "第一章 ch1 é 😀", ExerciseDigest: "plain"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := asciiJSON(b)
	for i, c := range out {
		if c >= 0x80 || c < 0x20 {
			t.Fatalf("byte %d of %s is not printable ASCII", i, out)
		}
	}
	var back domain.Lease
	if err := json.Unmarshal(out, &back); err != nil || back.ExerciseID != in.ExerciseID || back.JobID != 7 {
		t.Errorf("%s decodes to %+v, %v", out, back, err)
	}
	plain := []byte(`{"a":"b"}`)
	if got := asciiJSON(plain); string(got) != string(plain) {
		t.Errorf("asciiJSON changed ASCII %s to %s", plain, got)
	}
}
