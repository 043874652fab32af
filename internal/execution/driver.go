package execution

import (
	"fmt"
	"strings"
)

// The driver protocol: the Go side writes driverConfig as the driver's
// CONFIG file, the driver (driver.py, embedded) executes the notebook and
// keeps its progress file current, and writes the executed notebook to
// Output cell by cell.

// driverConfig is driver.py's CONFIG file.
type driverConfig struct {
	Notebook          string                       `json:"notebook"`
	Output            string                       `json:"output"`
	Progress          string                       `json:"progress"`
	Cwd               string                       `json:"cwd"`
	Config            map[string]map[string]string `json:"config"`
	CellTimeout       int                          `json:"cell_timeout"`
	InterruptGrace    float64                      `json:"interrupt_grace"`
	MaxCellOutput     int64                        `json:"max_cell_output"`
	MaxNotebookOutput int64                        `json:"max_notebook_output"`
	MaxCellOutputs    int                          `json:"max_cell_outputs"`
	StartupTimeout    int                          `json:"startup_timeout"`
	// Preload (warm drivers only) names modules imported in the kernel
	// before the job is handed over.
	Preload []string `json:"preload,omitempty"`
}

// progress is what the driver last wrote to its progress file.
type progress struct {
	Cell       *int `json:"cell"`
	KernelDied bool `json:"kernel_died"`
	Done       bool `json:"done"`
}

// traitletsConfig turns nbconvert command-line options ("--Class.trait=value",
// as sandbox.Kernel.Args holds them) into the driver's config map.
func traitletsConfig(args []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, a := range args {
		kv, ok := strings.CutPrefix(a, "--")
		key, val, ok2 := strings.Cut(kv, "=")
		cls, trait, ok3 := strings.Cut(key, ".")
		if !ok || !ok2 || !ok3 {
			return nil, fmt.Errorf("kernel option %q: want --Class.trait=value", a)
		}
		if out[cls] == nil {
			out[cls] = map[string]string{}
		}
		out[cls][trait] = val
	}
	return out, nil
}
