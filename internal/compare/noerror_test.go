package compare_test

import (
	"testing"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/notebook"
)

// TestNoErrorStderr: no-error passes a cell that writes to stderr unless
// stderr is among the targets (nbgrader's scoring, an import option).
func TestNoErrorStderr(t *testing.T) {
	t.Parallel()
	warned := []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stderr", Text: "DeprecationWarning: x\n"}}
	plain, _ := compare.ParseRule(nil, []byte(`{"compare": "no-error"}`))
	strict, _ := compare.ParseRule(nil, []byte(`{"compare": "no-error", "targets": ["stderr"]}`))
	if r := compare.Outputs(plain, nil, warned); !r.Pass {
		t.Errorf("no-error failed a cell for a warning: %s", r.Message)
	}
	if r := compare.Outputs(strict, nil, warned); r.Pass || r.Message != "the cell wrote to stderr" {
		t.Errorf("no-error with stderr targeted: pass %v, %q", r.Pass, r.Message)
	}
	if r := compare.Outputs(strict, nil, nil); !r.Pass {
		t.Errorf("a silent cell failed: %s", r.Message)
	}
}
