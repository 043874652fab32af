package importer_test

import (
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// TestRequiresFromImports: an imported exercise needs what its notebook
// imports and calls.
func TestRequiresFromImports(t *testing.T) {
	t.Parallel()
	nb := func(srcs ...string) *notebook.Notebook {
		n := &notebook.Notebook{}
		for _, s := range srcs {
			n.Cells = append(n.Cells, &notebook.Cell{CellType: "code", Source: notebook.MultilineString(s)})
		}
		n.Cells = append(n.Cells, &notebook.Cell{CellType: "markdown", Source: "import torch; torch.compile"})
		return n
	}
	for _, tc := range []struct {
		name string
		nb   *notebook.Notebook
		want domain.Requirement
	}{
		{"plain python", nb("print(1)"), domain.Requirement{}},
		{"torch.fx only", nb("import torch\nimport torch.fx as fx"), domain.Requirement{Torch: ">=1.13"}},
		{"compile with npugraph_ex", nb("import torch, torch_npu", "opt = torch.compile(m, backend=\"npugraph_ex\")"),
			domain.Requirement{Python: ">=3.8", Torch: ">=2.1", Backend: "npugraph_ex"}},
		{"dynamo", nb("from torch import nn\nimport torch._dynamo"), domain.Requirement{Python: ">=3.8", Torch: ">=2.1"}},
		{"only markdown mentions torch", nb(), domain.Requirement{}},
	} {
		if got := importer.RequiresFromImports(tc.nb); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
