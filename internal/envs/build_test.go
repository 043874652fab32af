package envs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// fakeTools writes a stand-in debootstrap (it makes a root filesystem with
// an executable /usr/bin/python3 and counts its runs; a file runs.fail
// makes it fail)
// and chroot (it logs its commands). They replace the real ones only for
// the cache-key logic; `make test` builds the real environment.
func fakeTools(t *testing.T) (debootstrap, chroot, runs, chrootLog string) {
	t.Helper()
	dir := t.TempDir()
	runs, chrootLog = filepath.Join(dir, "runs"), filepath.Join(dir, "chroot.log")
	debootstrap = filepath.Join(dir, "debootstrap")
	chroot = filepath.Join(dir, "chroot")
	script := `#!/bin/sh
echo "$@" >> ` + runs + `
[ -e ` + runs + `.fail ] && { echo "E: fake failure" >&2; exit 1; }
target=$4
mkdir -p "$target/usr/bin" "$target/usr/lib/python3/dist-packages" "$target/etc"
printf '#!/bin/sh\n' > "$target/usr/bin/python3.13"
chmod 755 "$target/usr/bin/python3.13"
ln -s python3.13 "$target/usr/bin/python3"
echo "I: Base system installed successfully."
`
	if err := os.WriteFile(debootstrap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chroot, []byte("#!/bin/sh\necho \"$@\" >> "+chrootLog+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return debootstrap, chroot, runs, chrootLog
}

// fakeMirror serves a suite's Release file over HTTP.
func fakeMirror(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debian/dists/trixie/Release" {
			_, _ = w.Write([]byte("Suite: stable\nCodename: trixie\n"))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/debian"
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func standIn(version string) fstest.MapFS {
	return fstest.MapFS{
		"__init__.py":             {Data: []byte("VERSION = " + version + "\n")},
		"backend.py":              {Data: []byte("def npugraph_ex(gm, example_inputs):\n    return gm\n")},
		"__pycache__/backend.pyc": {Data: []byte("stale bytecode")},
	}
}

func TestBuildIsCachedByKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("building an environment needs root")
	}
	t.Parallel()
	debootstrap, chroot, runs, chrootLog := fakeTools(t)
	s := Store{Dir: t.TempDir()}
	var progress strings.Builder
	opts := BuildOptions{Mirror: fakeMirror(t), Debootstrap: debootstrap, Chroot: chroot, StandIn: standIn("1"), Progress: &progress}
	ctx := context.Background()
	build := func(o BuildOptions, wantAction string, wantRuns int) Env {
		t.Helper()
		res, err := s.Build(ctx, o)
		if err != nil {
			t.Fatalf("Build: %v\n%s", err, progress.String())
		}
		if res.Action != wantAction {
			t.Errorf("Build did %q, want %q", res.Action, wantAction)
		}
		if n := countLines(t, runs); n != wantRuns {
			t.Errorf("debootstrap ran %d times, want %d", n, wantRuns)
		}
		return res.Env
	}

	env := build(opts, "built", 1)
	root := env.Root()
	installed := filepath.Join(root, "usr/lib/python3/dist-packages", StandInPackage)
	checkFirstBuild(t, env, opts, runs, chrootLog)
	firstKey := env.Meta.Key

	// Same inputs: reused, nothing runs.
	build(opts, "reused", 1)
	if !strings.Contains(progress.String(), "up to date") {
		t.Errorf("no up-to-date message:\n%s", progress.String())
	}

	// Only the stand-in changed: reinstalled, no debootstrap.
	o2 := opts
	o2.StandIn = standIn("2")
	env = build(o2, "stand-in", 1)
	if env.Meta.Key == firstKey {
		t.Error("a changed stand-in kept the key")
	}
	if b, _ := os.ReadFile(filepath.Join(installed, "__init__.py")); string(b) != "VERSION = 2\n" {
		t.Errorf("stand-in not reinstalled: %q", b)
	}

	// The stand-in not written yet: the build says so and installs none.
	o3 := opts
	o3.StandIn = fstest.MapFS{}
	progress.Reset()
	env = build(o3, "stand-in", 1)
	if env.Meta.StandIn != "absent" || !strings.Contains(progress.String(), "WARNING: the CPU stand-in package") {
		t.Errorf("absent stand-in: meta %q, progress %q", env.Meta.StandIn, progress.String())
	}
	if _, err := os.Stat(filepath.Join(root, "etc/ipython/ipython_kernel_config.py")); err == nil {
		t.Error("kernels still import a stand-in that is not installed")
	}

	// A package list change rebuilds; so does Force.
	o4 := opts
	o4.Packages = append([]string{"python3-scipy"}, CPUPackages...)
	env = build(o4, "built", 2)
	if env.Meta.BaseKey == "" || env.Meta.BaseKey == opts.BaseKey() {
		t.Errorf("base key %q did not change with the packages", env.Meta.BaseKey)
	}
	o4.Force = true
	build(o4, "built", 3)

	// A failed rebuild leaves the last good environment in place.
	if err := os.WriteFile(runs+".fail", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Build(ctx, opts); err == nil || !strings.Contains(err.Error(), "fake failure") {
		t.Errorf("failed debootstrap: err %v", err)
	}
	if got, err := s.Get("cpu"); err != nil || got.Meta.Key != env.Meta.Key {
		t.Errorf("after a failed build: %+v, %v", got.Meta, err)
	}
	if ents, _ := filepath.Glob(filepath.Join(s.Dir, "cpu", ".build-*")); len(ents) > 0 {
		t.Errorf("build leftovers: %v", ents)
	}
}

func TestBuildSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	s := Store{Dir: t.TempDir()}
	_, err := s.Build(context.Background(), BuildOptions{Mirror: dead + "/debian", Debootstrap: "npugrade-no-such-debootstrap"})
	if err == nil {
		t.Fatal("Build succeeded without debootstrap or mirror")
	}
	for _, want := range []string{"npugrade-no-such-debootstrap not found", "apt-get install debootstrap", "Debian mirror " + dead + "/debian unreachable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := s.Get("cpu"); err == nil {
		t.Error("a failed build left an environment")
	}
	// A mirror without the suite.
	if err := checkMirror(context.Background(), fakeMirror(t), "sid"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("mirror without the suite: %v", err)
	}
}

func TestNamesAndHostMirror(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "host", "../x", "CPU", "a/b", ".hidden", strings.Repeat("x", 70)} {
		if CheckName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	for _, good := range []string{"cpu", "npu-a2", "cann_9.0.0"} {
		if err := CheckName(good); err != nil {
			t.Errorf("name %q: %v", good, err)
		}
	}
	if m := HostMirror(); !strings.Contains(m, "://") {
		t.Errorf("HostMirror() = %q", m)
	}
	if _, err := (Store{Dir: t.TempDir()}).Get("cpu"); err == nil || !strings.Contains(err.Error(), "npugrade env build cpu") {
		t.Errorf("Get of a missing environment: %v", err)
	}
}

// checkFirstBuild checks what a fresh build did: debootstrap's arguments,
// the python3-zmq fix in the chroot, the stand-in and the kernel startup.
func checkFirstBuild(t *testing.T, env Env, opts BuildOptions, runs, chrootLog string) {
	t.Helper()
	root := env.Root()
	if env.Meta.Python != "/usr/bin/python3" || env.Meta.Source != SourceDebootstrap || env.Meta.Key == "" {
		t.Errorf("meta = %+v", env.Meta)
	}
	args, _ := os.ReadFile(runs)
	for _, want := range []string{"--variant=minbase", "--include=python3-torch,", "python3-ipykernel", "trixie", opts.Mirror} {
		if !strings.Contains(string(args), want) {
			t.Errorf("debootstrap args %q lack %q", args, want)
		}
	}
	logged, _ := os.ReadFile(chrootLog)
	if !strings.Contains(string(logged), root[:len(root)-len("rootfs")]) || !strings.Contains(string(logged), "apt-get install -y -q python3-cffi-backend") ||
		!strings.Contains(string(logged), "dpkg --configure -a") {
		t.Errorf("python3-zmq was not fixed in the chroot: %q", logged)
	}
	installed := filepath.Join(root, "usr/lib/python3/dist-packages", StandInPackage)
	if b, err := os.ReadFile(filepath.Join(installed, "__init__.py")); err != nil || string(b) != "VERSION = 1\n" {
		t.Errorf("stand-in not installed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(installed, "__pycache__")); err == nil {
		t.Error("bytecode was installed")
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/ipython/ipython_kernel_config.py")); err != nil || !strings.Contains(string(b), "import "+StandInPackage) {
		t.Errorf("kernels do not import the stand-in: %q %v", b, err)
	}
}
