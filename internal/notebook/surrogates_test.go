package notebook

import (
	"encoding/json"
	"testing"
)

// TestLoneSurrogatesKept: a lone surrogate a learner printed survives as
// the visible text of its escape instead of becoming U+FFFD; valid pairs
// and other escapes decode as before.
func TestLoneSurrogatesKept(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"a\ud800b"`:              `a\ud800b`,
		`"\udc00"`:                `\udc00`,
		`"\ud83d\ude00"`:          "\U0001F600",
		`"\\ud800"`:               `\ud800`,
		`"x\ud800\ud800y"`:        `x\ud800\ud800y`,
		`"\u00e9 \" \n \u0000"`:   "é \" \n \x00",
		`{"k": "\ud800", "n": 1}`: "",
	} {
		var got any
		if err := json.Unmarshal(keepLoneSurrogates([]byte(in)), &got); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if s, ok := got.(string); ok && s != want {
			t.Errorf("%s decoded to %q, want %q", in, s, want)
		}
		if m, ok := got.(map[string]any); ok && m["k"] != `\ud800` {
			t.Errorf("%s: k = %q", in, m["k"])
		}
	}
}
