package notebook

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeGeneric gives what jsonschema.UnmarshalJSON gives, value or error.
func TestDecodeGenericMatchesJSONSchema(t *testing.T) {
	t.Parallel()
	docs := []string{`{}`, `[]`, ` {"a": [1, -2.5e+3, 0, true, false, null, "x\n\u00e9\ud83d\ude00"], "a": {"b": {}}} `,
		`{"k": "\ud800"}`, "{\"k\": \"a\xffb\"}", `[01]`, `[1.]`, `[-]`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `{} x`, `"\x01"`,
		`[1e5, 1E-2, -0, 0.0]`, `{"a":tru}`, `nul`, ``, `[`, `{"a":"b`}
	paths, _ := filepath.Glob("../../answers/*/*.ipynb")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	for _, d := range docs {
		got, gotErr := decodeGeneric([]byte(d))
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(d)))
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) || !reflect.DeepEqual(got, want) {
			t.Errorf("%.60q: got %v, %v; jsonschema gives %v, %v", d, got, gotErr, want, wantErr)
		}
	}
}

func FuzzDecodeGeneric(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x"]}`, `[true,null]`, `{"a":{"b":"\u00e9"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		got, gotErr := decodeGeneric([]byte(d))
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(d)))
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %v, %v; jsonschema gives %v, %v", d, got, gotErr, want, wantErr)
		}
	})
}
