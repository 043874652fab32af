// Package envs manages grading environments: named root filesystems the
// sandbox runs learner kernels in (sandbox.Config.RootFS), each with what
// it reports (python, torch, torch_npu, TorchAir, CANN) from the
// environment probe run inside it.
//
// An environment lives in <store>/<name>/: rootfs/ (the filesystem) and
// env.json (Meta), written last, so a directory without env.json is an
// unfinished build or import and is never used. The cpu environment is
// built with debootstrap (Debian 13, PyTorch 2.x, ipykernel, the CPU
// stand-in of the npugraph_ex backend; see Build); NPU environments are
// imported from the CANN images learners use (a `docker export` tarball or
// an OCI image layout; see ImportTar and ImportOCI).
package envs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// Host names the runner's own system instead of an environment
// (`--env host`): kernels run on the host's Python, as before environments.
const Host = "host"

// DefaultDir is where environments live unless told otherwise: under the
// data directory, beside the SQLite database of `make run`.
const DefaultDir = "data/envs"

const (
	metaFile  = "env.json"
	rootfsDir = "rootfs"
)

// Sources of an environment.
const (
	SourceDebootstrap  = "debootstrap"
	SourceDockerExport = "docker-export"
	SourceOCI          = "oci"
)

// Meta is env.json.
type Meta struct {
	Name   string `json:"name"`
	Source string `json:"source"` // SourceDebootstrap, SourceDockerExport or SourceOCI
	// Origin says where it came from: the suite and mirror, or the file.
	Origin string `json:"origin"`
	// Key is the build's cache key (debootstrap builds only): a build
	// whose inputs hash to the same key reuses the environment.
	Key string `json:"key,omitempty"`
	// BaseKey keys the debootstrapped system alone (suite, packages):
	// when only the stand-in changed, it is reinstalled without a new
	// debootstrap.
	BaseKey  string   `json:"base_key,omitempty"`
	Packages []string `json:"packages,omitempty"`
	// StandIn is the hash of the installed CPU stand-in package, or
	// "absent" when the build found none.
	StandIn string `json:"stand_in,omitempty"`
	// Python is the interpreter inside the root filesystem.
	Python string `json:"python"`
	// Env is the image's environment (OCI config), given to kernels
	// (e.g. ASCEND_HOME_PATH, LD_LIBRARY_PATH of a CANN image).
	Env     map[string]string `json:"env,omitempty"`
	Created time.Time         `json:"created"`
	// Report is the environment probe's last report from inside it.
	Report *envprobe.Report `json:"report,omitempty"`
}

// Env is one environment in a Store.
type Env struct {
	Name string
	Dir  string
	Meta Meta
}

// Root is the host path of the environment's root filesystem.
func (e Env) Root() string { return filepath.Join(e.Dir, rootfsDir) }

// Store is a directory of environments.
type Store struct {
	Dir string
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ErrNotFound means there is no (finished) environment of that name.
var ErrNotFound = errors.New("no such grading environment")

// CheckName refuses names that are not safe directory names, and "host".
func CheckName(name string) error {
	if !validName.MatchString(name) || name == Host {
		return fmt.Errorf("environment name %q: want lower-case letters, digits, '.', '_' or '-' (not %q)", name, Host)
	}
	return nil
}

func (s Store) dir(name string) (string, error) {
	d, err := filepath.Abs(filepath.Join(s.Dir, name))
	if err != nil {
		return "", fmt.Errorf("environment %s: %w", name, err)
	}
	return d, nil
}

// Get returns the environment name.
func (s Store) Get(name string) (Env, error) {
	if err := CheckName(name); err != nil {
		return Env{}, err
	}
	dir, err := s.dir(name)
	if err != nil {
		return Env{}, err
	}
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return Env{}, fmt.Errorf("environment %q in %s: %w (build it with `npugrade env build cpu`, or import one with `npugrade env import`)", name, s.Dir, ErrNotFound)
	}
	if err != nil {
		return Env{}, fmt.Errorf("environment %s: %w", name, err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Env{}, fmt.Errorf("environment %s: %s: %w", name, metaFile, err)
	}
	return Env{Name: name, Dir: dir, Meta: m}, nil
}

// List returns every finished environment, by name.
func (s Store) List() ([]Env, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	var out []Env
	for _, e := range ents {
		if !e.IsDir() || CheckName(e.Name()) != nil {
			continue
		}
		env, err := s.Get(e.Name())
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, env)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// writeMeta writes env.json atomically: it marks the environment finished.
func writeMeta(dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", metaFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, metaFile)); err != nil {
		return fmt.Errorf("write %s: %w", metaFile, err)
	}
	return nil
}

// SaveReport records a fresh probe report in env.json.
func (s Store) SaveReport(e Env, r envprobe.Report) error {
	e.Meta.Report = &r
	return writeMeta(e.Dir, e.Meta)
}

// lock takes the environment's exclusive lock (a build, an import, a
// removal): two `make test` runs must not debootstrap into one directory.
func (s Store) lock(name string) (unlock func(), err error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("environments dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock environment %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock environment %s: %w", name, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// replaceRootFS moves a finished root filesystem into place (removing the
// old one) and writes env.json; until then the old environment, if any,
// stays whole.
func replaceRootFS(dir, newRoot string, m Meta) error {
	_ = os.Remove(filepath.Join(dir, metaFile))
	old := filepath.Join(dir, rootfsDir)
	if _, err := os.Lstat(old); err == nil {
		trash := filepath.Join(dir, ".old-"+fmt.Sprint(time.Now().UnixNano()))
		if err := os.Rename(old, trash); err != nil {
			return fmt.Errorf("replace root filesystem: %w", err)
		}
		defer os.RemoveAll(trash)
	}
	if err := os.Rename(newRoot, old); err != nil {
		return fmt.Errorf("replace root filesystem: %w", err)
	}
	// The unprivileged sandbox resolves the binds itself.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	return writeMeta(dir, m)
}

// Remove deletes an environment.
func (s Store) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	unlock, err := s.lock(name)
	if err != nil {
		return err
	}
	defer unlock()
	dir, err := s.dir(name)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove environment %s: %w", name, err)
	}
	return nil
}

// resolveIn resolves an absolute path inside a root filesystem (its
// symlinks are the environment's; see sandbox.ResolveIn).
var resolveIn = sandbox.ResolveIn
