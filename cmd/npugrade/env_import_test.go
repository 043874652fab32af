package main

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeInterpreter stands in for an NPU image's python3 (no image with
// torch_npu exists here): a static program that answers the environment
// probe as torch_npu 2.8.0.post4 on torch 2.8.0 would, with no NPU.
const fakeInterpreter = `package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "-c" || !strings.Contains(os.Args[2], "NPUGRADE_ENVPROBE_JSON") {
		fmt.Fprintln(os.Stderr, "fake python3: only the environment probe is answered")
		os.Exit(2)
	}
	fmt.Println("NPUGRADE_ENVPROBE_JSON:" + ` + "`" + `{"sys_version": "3.11.13 (fake)", "python": "3.11.13", "machine": "x86_64", "torch": "2.8.0+cpu", "torch_npu": "2.8.0.post4", "torchair": true, "npugraph_ex_package": true, "dynamo": true, "npugraph_ex_backend": true, "npu_available": false, "errors": {}}` + "`" + `)
}
`

// TestEnvImportTarAndList imports a small `docker export`-style tarball of
// an NPU image through the CLI, probes it from inside (the sandbox runs the
// image's own interpreter, and the CANN version is read from the image's
// toolkit files, not the host's) and lists it with its verdict.
func TestEnvImportTarAndList(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	requireSandboxExec(t)
	t.Parallel()
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte(fakeInterpreter), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "python3")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the fake interpreter: %v\n%s", err, out)
	}
	py, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name, body string
		mode       int64
		dir        bool
	}{
		{name: "usr/", dir: true}, {name: "usr/local/", dir: true}, {name: "usr/local/python3.11.13/bin/", dir: true},
		{name: "usr/local/python3.11.13/bin/python3", body: string(py), mode: 0o755},
		{name: "usr/local/Ascend/ascend-toolkit/latest/" + arch + "-linux/ascend_toolkit_install.info",
			body: "package_name=Ascend-cann-toolkit\nversion=9.0.0\narch=" + arch + "\n", mode: 0o644},
		{name: "etc/", dir: true}, {name: "etc/os-release", body: "ID=fake-cann\n", mode: 0o644},
	} {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.dir {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(t.TempDir(), "cann.tar")
	if err := os.WriteFile(tarFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox's unprivileged bwrap must reach the root filesystem.
	dir, err := os.MkdirTemp("", "npgenv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"env", "import", "npu-a2", "--tar", tarFile, "--dir", dir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("env import: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"env", "list", "--dir", dir, "--probe"}, &out, &errb); code != exitOK {
		t.Fatalf("env list: exit %d\n%s", code, errb.String())
	}
	t.Logf("env list:\n%s", out.String())
	for _, want := range []string{"npu-a2", "docker-export", "python 3.11.13", "torch_npu 2.8.0.post4", "torchair 26.0.0", "cann 9.0.0", "npugraph_ex true", "verdict ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("env list lacks %q", want)
		}
	}
	if code := run(context.Background(), []string{"env", "rm", "npu-a2", "--dir", dir}, &out, &errb); code != exitOK {
		t.Fatalf("env rm: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"env", "list", "--dir", dir}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "no grading environments") {
		t.Errorf("env list after env rm: exit %d: %s", code, out.String())
	}
}
