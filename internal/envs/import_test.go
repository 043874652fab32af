package envs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func makeTar(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w = &buf
	var zw *gzip.Writer
	tw := tar.NewWriter(w)
	if gz {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body))}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// rootfsEntries is a small root filesystem as `docker export` writes one.
func rootfsEntries() []entry {
	return []entry{
		{name: "usr/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/python3.11", typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\n"},
		{name: "usr/bin/python3", typ: tar.TypeSymlink, link: "python3.11"},
		{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"},
		{name: "usr/bin/su", typ: tar.TypeReg, mode: 0o4755, body: "setuid"},
		{name: "usr/bin/python", typ: tar.TypeLink, link: "usr/bin/python3.11"},
		{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		{name: "etc/os-release", typ: tar.TypeReg, body: "ID=fake\n"},
	}
}

func TestImportTar(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		s := Store{Dir: t.TempDir()}
		env, err := s.ImportTar(context.Background(), "npu-a2", bytes.NewReader(makeTar(t, gz, rootfsEntries()...)), "image.tar")
		if err != nil {
			t.Fatalf("gzip=%v: %v", gz, err)
		}
		root := env.Root()
		if env.Meta.Python != "/usr/local/bin/python3" && env.Meta.Python != "/usr/bin/python3" || env.Meta.Source != SourceDockerExport {
			t.Errorf("meta %+v", env.Meta)
		}
		if l, _ := os.Readlink(filepath.Join(root, "bin")); l != "usr/bin" {
			t.Errorf("bin -> %q", l)
		}
		if fi, err := os.Stat(filepath.Join(root, "usr/bin/su")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
			t.Errorf("setuid kept or file missing: %v %v", fi, err)
		}
		a, _ := os.Stat(filepath.Join(root, "usr/bin/python"))
		b, _ := os.Stat(filepath.Join(root, "usr/bin/python3.11"))
		if a == nil || !os.SameFile(a, b) {
			t.Error("hard link not kept")
		}
		if _, err := os.Lstat(filepath.Join(root, "dev/null")); err == nil {
			t.Error("a device node was created")
		}
		if _, err := os.Stat(filepath.Join(root, "usr/local/Ascend/driver")); err != nil {
			t.Errorf("no mount point for the NPU driver: %v", err)
		}
		list, err := s.List()
		if err != nil || len(list) != 1 || list[0].Name != "npu-a2" {
			t.Errorf("List = %v, %v", list, err)
		}
	}
}

func TestImportTarRefusesEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	cases := map[string][]entry{
		"dotdot": {{name: "../../victim", typ: tar.TypeReg, body: "x"}},
		"through-symlink": {
			{name: "usr/bin/python3", typ: tar.TypeReg, mode: 0o755, body: "#!"},
			{name: "esc", typ: tar.TypeSymlink, link: outside},
			{name: "esc/victim", typ: tar.TypeReg, body: "x"},
		},
		"hardlink-out": {{name: "h", typ: tar.TypeLink, link: "../../../etc/passwd"}},
		"no-python":    {{name: "usr/share/doc", typ: tar.TypeReg, body: "x"}},
	}
	for name, entries := range cases {
		s := Store{Dir: t.TempDir()}
		_, err := s.ImportTar(context.Background(), "bad", bytes.NewReader(makeTar(t, false, entries...)), name)
		if err == nil {
			t.Errorf("%s: imported", name)
		}
		if _, err := os.Stat(victim); err == nil {
			t.Fatalf("%s: wrote outside the root", name)
		}
		if _, err := s.Get("bad"); err == nil {
			t.Errorf("%s: a failed import left an environment", name)
		}
	}
}

func writeBlob(t *testing.T, layout string, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	d := filepath.Join(layout, "blobs", "sha256")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, hex.EncodeToString(sum[:])), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestImportOCI(t *testing.T) {
	t.Parallel()
	layout := t.TempDir()
	l1 := writeBlob(t, layout, makeTar(t, true,
		entry{name: "usr/local/python3.11.13/bin/python3", typ: tar.TypeReg, mode: 0o755, body: "#!"},
		entry{name: "usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info", typ: tar.TypeReg, body: "version=9.0.0\n"},
		entry{name: "opt/old/a", typ: tar.TypeReg, body: "a"},
		entry{name: "etc/stale", typ: tar.TypeReg, body: "x"}))
	l2 := writeBlob(t, layout, makeTar(t, false,
		entry{name: "etc/.wh.stale", typ: tar.TypeReg},
		entry{name: "opt/old/.wh..wh..opq", typ: tar.TypeReg},
		entry{name: "opt/old/b", typ: tar.TypeReg, body: "b"}))
	cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "config": map[string]any{"Env": []string{
		"PATH=/usr/local/python3.11.13/bin:/usr/local/bin:/usr/bin", "ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest", "HOME=/root"}}})
	cfgD := writeBlob(t, layout, cfg)
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "config": map[string]string{"digest": cfgD},
		"layers": []map[string]string{{"digest": l1}, {"digest": l2}}})
	manD := writeBlob(t, layout, man)
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []map[string]string{{"digest": manD}}})
	if err := os.WriteFile(filepath.Join(layout, "index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	s := Store{Dir: t.TempDir()}
	env, err := s.ImportOCI(context.Background(), "npu-a2", layout)
	if err != nil {
		t.Fatal(err)
	}
	root := env.Root()
	if env.Meta.Python != "/usr/local/python3.11.13/bin/python3" || env.Meta.Source != SourceOCI {
		t.Errorf("meta %+v", env.Meta)
	}
	if env.Meta.Env["ASCEND_HOME_PATH"] != "/usr/local/Ascend/ascend-toolkit/latest" || env.Meta.Env["HOME"] != "" {
		t.Errorf("image env %v", env.Meta.Env)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/stale")); err == nil {
		t.Error("whiteout ignored")
	}
	if _, err := os.Stat(filepath.Join(root, "opt/old/a")); err == nil {
		t.Error("opaque whiteout ignored")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "opt/old/b")); string(b) != "b" {
		t.Error("upper layer file missing")
	}
	if _, err := s.ImportOCI(context.Background(), "x", t.TempDir()); err == nil || !strings.Contains(err.Error(), "not an OCI image layout") {
		t.Errorf("import of an empty dir: %v", err)
	}
}
