package envs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The cpu environment: Debian 13 with its PyTorch 2.x (Dynamo, so real
// torch.compile), the kernel side of nbconvert, and numpy. python3-cffi-
// backend is named because debootstrap does not resolve the virtual
// package python3-zmq depends on (see fixZMQ).
var (
	CPUSuite    = "trixie"
	CPUPackages = []string{
		"python3-torch", "python3-numpy", "python3-ipykernel", "python3-jupyter-client",
		"python3-nbconvert", "python3-cffi-backend",
	}
)

// buildRecipe versions the build steps below: a change to them that
// changes the result bumps it, so existing environments are rebuilt.
const buildRecipe = "cpu-1"

// BuildOptions configure Build. The zero value builds the cpu environment.
type BuildOptions struct {
	Name     string   // default "cpu"
	Suite    string   // default CPUSuite
	Packages []string // default CPUPackages
	// Mirror is the Debian mirror (default: the one apt uses here, else
	// http://deb.debian.org/debian).
	Mirror string
	// StandIn is the CPU stand-in package (default: the one built into
	// this binary, EmbeddedStandIn).
	StandIn fs.FS
	// Debootstrap and Chroot are the commands (default "debootstrap",
	// "chroot"); tests replace them.
	Debootstrap, Chroot string
	// Force rebuilds even when the cache key matches.
	Force bool
	// Progress receives human-readable progress (the first build takes
	// minutes). Default: discarded.
	Progress io.Writer
}

func (o *BuildOptions) defaults() {
	if o.Name == "" {
		o.Name = "cpu"
	}
	if o.Suite == "" {
		o.Suite = CPUSuite
	}
	if len(o.Packages) == 0 {
		o.Packages = CPUPackages
	}
	if o.Mirror == "" {
		o.Mirror = HostMirror()
	}
	if o.StandIn == nil {
		o.StandIn = EmbeddedStandIn()
	}
	if o.Debootstrap == "" {
		o.Debootstrap = "debootstrap"
	}
	if o.Chroot == "" {
		o.Chroot = "chroot"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// BaseKey keys the debootstrapped system: suite, packages, recipe (not
// the mirror: any mirror serves the same suite).
func (o BuildOptions) BaseKey() string {
	pk := slices.Clone(o.Packages)
	slices.Sort(pk)
	sum := sha256.Sum256([]byte(buildRecipe + "\n" + o.Suite + "\nminbase\n" + strings.Join(pk, ",")))
	return hex.EncodeToString(sum[:])[:16]
}

// Key is the whole build's cache key: the base plus the stand-in's hash.
func Key(baseKey, standIn string) string {
	sum := sha256.Sum256([]byte(baseKey + "\n" + standIn))
	return hex.EncodeToString(sum[:])[:16]
}

// BuildResult says what Build did.
type BuildResult struct {
	Env Env
	// Action is "reused" (the key matched), "stand-in" (only the stand-in
	// was reinstalled) or "built" (a new debootstrap).
	Action string
}

// Build builds the cpu environment with debootstrap, or reuses it when its
// cache key (packages, suite, the stand-in's content) is unchanged, or
// only reinstalls the stand-in when that alone changed. It needs root,
// debootstrap and a reachable Debian mirror, and says which is missing.
// The environment's report is not collected here (see Probe).
func (s Store) Build(ctx context.Context, o BuildOptions) (BuildResult, error) {
	o.defaults()
	if err := CheckName(o.Name); err != nil {
		return BuildResult{}, err
	}
	standIn, err := HashStandIn(o.StandIn)
	if err != nil {
		return BuildResult{}, err
	}
	baseKey := o.BaseKey()
	key := Key(baseKey, standIn)
	unlock, err := s.lock(o.Name)
	if err != nil {
		return BuildResult{}, err
	}
	defer unlock()
	dir, err := s.dir(o.Name)
	if err != nil {
		return BuildResult{}, err
	}
	if standIn == "absent" {
		fmt.Fprintf(o.Progress, "npugrade env: WARNING: the CPU stand-in package %s is not in this build of npugrade: the %s environment gets no npugraph_ex backend (a later build installs it)\n", StandInPackage, o.Name)
	}
	old, err := s.Get(o.Name)
	if err == nil && !o.Force && old.Meta.Key == key {
		fmt.Fprintf(o.Progress, "npugrade env: %s is up to date (key %s) in %s\n", o.Name, key, old.Dir)
		return BuildResult{Env: old, Action: "reused"}, nil
	}
	if err == nil && !o.Force && old.Meta.BaseKey == baseKey {
		fmt.Fprintf(o.Progress, "npugrade env: %s: only the stand-in changed; reinstalling it\n", o.Name)
		m := old.Meta
		m.Key, m.StandIn, m.Report = key, standIn, nil
		_ = os.Remove(filepath.Join(dir, metaFile))
		if err := installStandIn(old.Root(), o.StandIn); err != nil {
			return BuildResult{}, err
		}
		if err := writeMeta(dir, m); err != nil {
			return BuildResult{}, err
		}
		env, err := s.Get(o.Name)
		return BuildResult{Env: env, Action: "stand-in"}, err
	}
	if err := o.preflight(ctx); err != nil {
		return BuildResult{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return BuildResult{}, fmt.Errorf("build %s: %w", o.Name, err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return BuildResult{}, fmt.Errorf("build %s: %w", o.Name, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return BuildResult{}, err
	}
	start := time.Now()
	fmt.Fprintf(o.Progress, "npugrade env: building %s with debootstrap (Debian %s, %s) in %s; this takes minutes the first time\n",
		o.Name, o.Suite, strings.Join(o.Packages, " "), dir)
	if err := o.debootstrap(ctx, tmp); err != nil {
		return BuildResult{}, err
	}
	if err := o.fixZMQ(ctx, tmp); err != nil {
		return BuildResult{}, err
	}
	if err := installStandIn(tmp, o.StandIn); err != nil {
		return BuildResult{}, err
	}
	if err := checkRootPython(tmp, "/usr/bin/python3"); err != nil {
		return BuildResult{}, fmt.Errorf("build %s: debootstrap finished without Python: %w", o.Name, err)
	}
	m := Meta{Name: o.Name, Source: SourceDebootstrap, Origin: o.Suite + " from " + o.Mirror, Key: key, BaseKey: baseKey,
		Packages: o.Packages, StandIn: standIn, Python: "/usr/bin/python3", Created: time.Now().UTC()}
	if err := replaceRootFS(dir, tmp, m); err != nil {
		return BuildResult{}, err
	}
	fmt.Fprintf(o.Progress, "npugrade env: built %s in %s\n", o.Name, time.Since(start).Round(time.Second))
	env, err := s.Get(o.Name)
	return BuildResult{Env: env, Action: "built"}, err
}

// preflight names what a build needs and is missing: root, debootstrap,
// the mirror.
func (o BuildOptions) preflight(ctx context.Context) error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("building an environment needs root (debootstrap and chroot)"))
	}
	if _, err := exec.LookPath(o.Debootstrap); err != nil {
		errs = append(errs, fmt.Errorf("%s not found (install it: apt-get install debootstrap, or scripts/deps.sh): %w", o.Debootstrap, err))
	}
	if err := checkMirror(ctx, o.Mirror, o.Suite); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot build the %s environment: %w", o.Name, err)
	}
	return nil
}

// checkMirror fetches the suite's Release file.
func checkMirror(ctx context.Context, mirror, suite string) error {
	release := strings.TrimSuffix(mirror, "/") + "/dists/" + suite + "/Release"
	if p, ok := strings.CutPrefix(release, "file://"); ok {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("Debian mirror %s has no %s (set --mirror): %w", mirror, suite, err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, release, nil)
	if err != nil {
		return fmt.Errorf("Debian mirror %q: %w", mirror, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("Debian mirror %s unreachable (set --mirror to one this host can reach): %w", mirror, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("Debian mirror %s: %s answered %s (set --mirror)", mirror, release, resp.Status)
	}
	return nil
}

func (o BuildOptions) debootstrap(ctx context.Context, target string) error {
	args := []string{"--variant=minbase", "--include=" + strings.Join(o.Packages, ","), o.Suite, target, o.Mirror}
	if err := o.run(ctx, "debootstrap", o.Debootstrap, args); err != nil {
		return fmt.Errorf("build %s: %w", o.Name, err)
	}
	return nil
}

// fixZMQ finishes what debootstrap leaves unconfigured (python3-zmq wants
// the virtual python3-cffi-backend-api-max, which debootstrap does not
// resolve), then drops apt's caches.
func (o BuildOptions) fixZMQ(ctx context.Context, root string) error {
	resolv := filepath.Join(root, "etc/resolv.conf")
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		_ = os.Remove(resolv)
		_ = os.WriteFile(resolv, b, 0o644)
		defer os.Remove(resolv) // kernels have no network anyway
	}
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	steps := [][]string{
		{"apt-get", "install", "-y", "-q", "python3-cffi-backend"},
		{"dpkg", "--configure", "-a"},
		{"apt-get", "clean"},
	}
	for _, st := range steps {
		if err := o.run(ctx, "chroot", o.Chroot, append([]string{root}, st...), env...); err != nil {
			return fmt.Errorf("build %s: %w", o.Name, err)
		}
	}
	return nil
}

// run runs a build step, its output going to Progress line by line.
func (o BuildOptions) run(ctx context.Context, what, name string, args []string, env ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), env...)
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(o.Progress, "  %s: %s\n", what, sc.Text())
			if tail = append(tail, sc.Text()); len(tail) > 5 {
				tail = tail[1:]
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.Join(tail, " | "))
	}
	return nil
}

// HostMirror is the Debian mirror apt uses on this host (deb822 sources or
// sources.list), else deb.debian.org.
func HostMirror() string {
	var files []string
	d, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	files = append(files, d...)
	files = append(files, "/etc/apt/sources.list")
	l, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	files = append(files, l...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line)
			var uri string
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				uri = fields[1]
			case len(fields) >= 3 && fields[0] == "deb":
				uri = fields[1]
				if strings.HasPrefix(uri, "[") { // deb [opts] uri
					for _, f := range fields[2:] {
						if strings.Contains(f, "://") {
							uri = f
							break
						}
					}
				}
			}
			if strings.Contains(uri, "://") && !strings.Contains(uri, "security") && strings.HasSuffix(strings.TrimSuffix(uri, "/"), "/debian") {
				return strings.TrimSuffix(uri, "/")
			}
		}
	}
	return "http://deb.debian.org/debian"
}

// checkRootPython checks that python resolves to an executable inside root.
func checkRootPython(root, python string) error {
	p, err := resolveIn(root, python)
	if err != nil {
		return err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", python)
	}
	return nil
}
