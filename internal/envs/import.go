package envs

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// ImportTar imports a root filesystem from a tar stream (`docker export
// CONTAINER`, optionally gzipped) as environment name, replacing one of
// that name. The tar is untrusted: entries that would land outside the
// root (.., absolute links followed on the way) are refused, device nodes
// are skipped (the sandbox has its own /dev), setuid bits are dropped.
func (s Store) ImportTar(ctx context.Context, name string, r io.Reader, origin string) (Env, error) {
	return s.importLayers(ctx, name, SourceDockerExport, origin, nil, func(root string) error {
		return applyLayer(ctx, root, r, false)
	})
}

// ImportOCI imports an unpacked OCI image layout (index.json, blobs/):
// the manifest for this machine's architecture (or the only one), its
// layers applied in order with their whiteouts, and its config's Env kept
// for the kernels (a CANN image's ASCEND_HOME_PATH, LD_LIBRARY_PATH...).
func (s Store) ImportOCI(ctx context.Context, name, layout string) (Env, error) {
	man, cfg, err := readOCI(layout)
	if err != nil {
		return Env{}, fmt.Errorf("import %s from %s: %w", name, layout, err)
	}
	env := map[string]string{}
	for _, kv := range cfg.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return s.importLayers(ctx, name, SourceOCI, layout, env, func(root string) error {
		for _, l := range man.Layers {
			f, err := openBlob(layout, l.Digest)
			if err != nil {
				return err
			}
			err = applyLayer(ctx, root, f, true)
			f.Close()
			if err != nil {
				return fmt.Errorf("layer %s: %w", l.Digest, err)
			}
		}
		return nil
	})
}

func (s Store) importLayers(ctx context.Context, name, source, origin string, env map[string]string, fill func(root string) error) (Env, error) {
	if err := CheckName(name); err != nil {
		return Env{}, err
	}
	unlock, err := s.lock(name)
	if err != nil {
		return Env{}, err
	}
	defer unlock()
	dir, err := s.dir(name)
	if err != nil {
		return Env{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Env{}, fmt.Errorf("import %s: %w", name, err)
	}
	tmp, err := os.MkdirTemp(dir, ".import-")
	if err != nil {
		return Env{}, fmt.Errorf("import %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Env{}, err
	}
	if err := fill(tmp); err != nil {
		return Env{}, fmt.Errorf("import %s: %w", name, err)
	}
	python, err := findPython(tmp, env["PATH"])
	if err != nil {
		return Env{}, fmt.Errorf("import %s: %w", name, err)
	}
	// NPU hosts bind their driver here (the image does not ship it).
	_ = os.MkdirAll(filepath.Join(tmp, "usr/local/Ascend/driver"), 0o755)
	m := Meta{Name: name, Source: source, Origin: origin, Python: python, Env: kernelEnv(env), Created: time.Now().UTC()}
	if err := replaceRootFS(dir, tmp, m); err != nil {
		return Env{}, err
	}
	return s.Get(name)
}

// kernelEnv keeps the image variables a kernel may need; identity and
// shell variables are the sandbox's.
func kernelEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		switch k {
		case "HOME", "USER", "LOGNAME", "HOSTNAME", "TERM", "SHELL", "PWD":
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// findPython finds python3 in the image: on its PATH, then the usual places.
func findPython(root, pathVar string) (string, error) {
	var cands []string
	for _, d := range strings.Split(pathVar, ":") {
		if strings.HasPrefix(d, "/") {
			cands = append(cands, path.Join(d, "python3"))
		}
	}
	cands = append(cands, "/usr/local/bin/python3", "/usr/bin/python3")
	if m, _ := filepath.Glob(filepath.Join(root, "usr/local/python3*/bin/python3")); len(m) > 0 {
		cands = append(cands, "/"+strings.TrimPrefix(m[0], root+"/"))
	}
	for _, c := range cands {
		if checkRootPython(root, c) == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no python3 in the image (looked for %s)", strings.Join(cands, ", "))
}

// applyLayer extracts one tar layer (gzip detected) into root. With
// whiteouts (OCI layers), ".wh.NAME" deletes NAME and ".wh..wh..opq"
// empties its directory of what earlier layers put there.
func applyLayer(ctx context.Context, root string, r io.Reader, whiteouts bool) error {
	br, err := maybeGunzip(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(br)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if err := extractEntry(root, h, tr, whiteouts); err != nil {
			return err
		}
	}
}

func maybeGunzip(r io.Reader) (io.Reader, error) {
	buf := make([]byte, 2)
	n, err := io.ReadFull(r, buf)
	rest := io.MultiReader(strings.NewReader(string(buf[:n])), r)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if n == 2 && buf[0] == 0x1f && buf[1] == 0x8b {
		return gzip.NewReader(rest)
	}
	return rest, nil
}

// entryPath maps a tar name into root, refusing names that climb out and
// parents that are symlinks (which could point anywhere on the host).
func entryPath(root, name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean == "/" {
		return root, nil
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("tar entry %q: climbs out of the root", name)
		}
	}
	cur := root
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("tar entry %q: parent %s is not a directory (a symlink?)", name, strings.TrimPrefix(cur, root))
		}
	}
	return filepath.Join(cur, parts[len(parts)-1]), nil
}

func extractEntry(root string, h *tar.Header, r io.Reader, whiteouts bool) error {
	dst, err := entryPath(root, h.Name)
	if err != nil {
		return err
	}
	base := filepath.Base(dst)
	if whiteouts && strings.HasPrefix(base, ".wh.") {
		if base == ".wh..wh..opq" {
			ents, _ := os.ReadDir(filepath.Dir(dst))
			for _, e := range ents {
				_ = os.RemoveAll(filepath.Join(filepath.Dir(dst), e.Name()))
			}
			return nil
		}
		return os.RemoveAll(filepath.Join(filepath.Dir(dst), strings.TrimPrefix(base, ".wh.")))
	}
	mode := os.FileMode(h.Mode).Perm() // no setuid/setgid/sticky
	if h.Typeflag != tar.TypeDir {
		if fi, err := os.Lstat(dst); err == nil && (!fi.IsDir() || h.Typeflag != tar.TypeDir) {
			if err := os.RemoveAll(dst); err != nil {
				return err
			}
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if fi, err := os.Lstat(dst); err == nil && !fi.IsDir() {
			_ = os.Remove(dst)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(dst, mode); err != nil {
			return err
		}
	case tar.TypeReg, tar.TypeRegA:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", h.Name, err)
		}
		if err := os.Chmod(dst, mode); err != nil {
			return err
		}
	case tar.TypeSymlink:
		// Kept as written: it resolves inside the sandbox's root, never
		// followed here (entryPath refuses symlinked parents).
		return os.Symlink(h.Linkname, dst)
	case tar.TypeLink:
		src, err := entryPath(root, h.Linkname)
		if err != nil {
			return err
		}
		if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("tar entry %q: hard link to %q, not a regular file in the root", h.Name, h.Linkname)
		}
		return os.Link(src, dst)
	default: // devices, fifos: the sandbox makes its own /dev
		return nil
	}
	if os.Geteuid() == 0 {
		_ = os.Lchown(dst, h.Uid, h.Gid)
	}
	return nil
}

// OCI image layout, the parts used.
type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform,omitempty"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
	Manifests []ociDescriptor `json:"manifests"` // when it is an index
}

type ociConfig struct {
	Architecture string `json:"architecture"`
	Config       struct {
		Env []string `json:"Env"`
	} `json:"config"`
}

func openBlob(layout, digest string) (*os.File, error) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || strings.ContainsAny(algo+hex, "/\\.") || algo == "" || hex == "" {
		return nil, fmt.Errorf("bad digest %q", digest)
	}
	return os.Open(filepath.Join(layout, "blobs", algo, hex))
}

func readJSONBlob(layout, digest string, v any) error {
	f, err := openBlob(layout, digest)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, 4<<20)).Decode(v); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	return nil
}

// pickManifest chooses this machine's architecture among descriptors, or
// the only one.
func pickManifest(ds []ociDescriptor) (ociDescriptor, error) {
	arch := runtime.GOARCH
	for _, d := range ds {
		if d.Platform != nil && d.Platform.Architecture == arch {
			return d, nil
		}
	}
	if len(ds) == 1 {
		return ds[0], nil
	}
	return ociDescriptor{}, fmt.Errorf("%d manifests and none for %s", len(ds), arch)
}

func readOCI(layout string) (ociManifest, ociConfig, error) {
	var idx ociIndex
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		return ociManifest{}, ociConfig{}, fmt.Errorf("not an OCI image layout: %w", err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return ociManifest{}, ociConfig{}, fmt.Errorf("index.json: %w", err)
	}
	ds := idx.Manifests
	for depth := 0; depth < 3; depth++ {
		d, err := pickManifest(ds)
		if err != nil {
			return ociManifest{}, ociConfig{}, err
		}
		var m ociManifest
		if err := readJSONBlob(layout, d.Digest, &m); err != nil {
			return ociManifest{}, ociConfig{}, err
		}
		if len(m.Manifests) > 0 { // a nested image index
			ds = m.Manifests
			continue
		}
		var cfg ociConfig
		if err := readJSONBlob(layout, m.Config.Digest, &cfg); err != nil {
			return ociManifest{}, ociConfig{}, err
		}
		return m, cfg, nil
	}
	return ociManifest{}, ociConfig{}, errors.New("image indexes nested too deep")
}
