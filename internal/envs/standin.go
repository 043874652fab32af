package envs

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// cpuExtras holds what the cpu environment gets beyond Debian's packages
// (cpu/README.md): the CPU stand-in of the npugraph_ex backend.
//
//go:embed all:cpu
var cpuExtras embed.FS

// StandInPackage is the Python package name of the CPU stand-in.
const StandInPackage = "npugraph_ex_cpu"

// EmbeddedStandIn is the stand-in package built into this binary, rooted
// at the package directory (it may be missing: see HashStandIn).
func EmbeddedStandIn() fs.FS {
	sub, _ := fs.Sub(cpuExtras, "cpu/"+StandInPackage)
	return sub
}

// kernelStartup is the IPython system config every kernel of the cpu
// environment loads (IPython reads /etc/ipython for every profile).
const kernelStartup = `# Written by npugrade (internal/envs) when it built this environment.
# Every kernel imports the CPU stand-in of TorchAir's npugraph_ex backend at
# start, as torch_npu registers the real backend on an NPU host.
c.InteractiveShellApp.exec_lines = ["import ` + StandInPackage + ` as _npugrade_stand_in; del _npugrade_stand_in"]
`

func skipped(name string) bool {
	return name == "__pycache__" || strings.HasSuffix(name, ".pyc")
}

// standInFiles lists the package's files (slash paths, sorted), or none.
func standInFiles(pkg fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(pkg, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skipped(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Strings(files)
	return files, err
}

// HashStandIn hashes the package's files; "absent" when it has no
// __init__.py (not written yet).
func HashStandIn(pkg fs.FS) (string, error) {
	files, err := standInFiles(pkg)
	if err != nil {
		return "", fmt.Errorf("stand-in package: %w", err)
	}
	if _, err := fs.Stat(pkg, "__init__.py"); err != nil {
		return "absent", nil
	}
	h := sha256.New()
	for _, f := range files {
		b, err := fs.ReadFile(pkg, f)
		if err != nil {
			return "", fmt.Errorf("stand-in package: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// installStandIn copies the package into root's dist-packages and makes
// the kernels import it at start. A missing package removes both, so the
// environment says plainly that it has no npugraph_ex backend.
func installStandIn(root string, pkg fs.FS) error {
	dest := filepath.Join(root, "usr/lib/python3/dist-packages", StandInPackage)
	startup := filepath.Join(root, "etc/ipython/ipython_kernel_config.py")
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("install stand-in: %w", err)
	}
	if err := os.Remove(startup); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("install stand-in: %w", err)
	}
	hash, err := HashStandIn(pkg)
	if err != nil || hash == "absent" {
		return err
	}
	files, err := standInFiles(pkg)
	if err != nil {
		return fmt.Errorf("install stand-in: %w", err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(pkg, f)
		if err != nil {
			return fmt.Errorf("install stand-in: %w", err)
		}
		p := filepath.Join(dest, filepath.FromSlash(path.Clean(f)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("install stand-in: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("install stand-in: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(startup), 0o755); err != nil {
		return fmt.Errorf("install stand-in: %w", err)
	}
	if err := os.WriteFile(startup, []byte(kernelStartup), 0o644); err != nil {
		return fmt.Errorf("install stand-in: %w", err)
	}
	return nil
}
