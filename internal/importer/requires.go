package importer

import (
	"regexp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
)

var (
	importsTorch = regexp.MustCompile(`(?m)^\s*(import\s+torch\b|from\s+torch\b)`)
	compiles     = regexp.MustCompile(`torch\.compile\b|torch\._dynamo\b`)
	npugraphEx   = regexp.MustCompile(`\bnpugraph_ex\b`)
)

// RequiresFromImports is the environment an imported exercise needs,
// read from its notebook's code, the default of its exercise.json
// `requires`: torch ≥ 2.1 (the oldest torch any TorchAir release
// supports) and Python ≥ 3.8 when it imports torch and compiles
// (torch.compile or torch._dynamo, which Debian's torch 1.13 lacks),
// torch ≥ 1.13 when it only imports torch, and the npugraph_ex backend
// when it names it. A notebook that imports none needs nothing.
func RequiresFromImports(nb *notebook.Notebook) domain.Requirement {
	var r domain.Requirement
	torch, compile, backend := false, false, false
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		src := c.Source.String()
		torch = torch || importsTorch.MatchString(src)
		compile = compile || compiles.MatchString(src)
		backend = backend || npugraphEx.MatchString(src)
	}
	switch {
	case torch && compile:
		r.Python, r.Torch = ">=3.8", ">=2.1"
	case torch:
		r.Torch = ">=1.13"
	}
	if torch && backend {
		r.Backend = "npugraph_ex"
	}
	return r
}
