package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment mode. With Config.RootFS set, the kernel runs with an
// environment's root filesystem (a debootstrapped Debian, an imported
// docker/OCI image) as its system instead of the host's: the rootfs's
// /usr, the /bin, /sbin and /lib* links or directories, and the same
// subset of /etc are bound read-only from it, nothing from the host's
// system is. Everything else (namespaces, the generated passwd, the work
// dir, /tmp, limits, cgroups, devices and driver dirs) is the host mode's.

// etcFromSystem lists what the kernel sees of the system's /etc besides
// etcReadOnly: Python's own config dirs, and IPython's system config,
// where an environment makes its kernels import its backends at start.
var etcFromSystem = []string{"/etc/python3*", "/etc/ipython"}

// systemBinds are the bwrap arguments that make up the read-only system:
// the host's, or the environment's when cfg.RootFS is set.
func systemBinds(cfg Config) []string {
	root := cfg.RootFS
	src := func(p string) string { return filepath.Join(root, p) }
	if root == "" {
		src = func(p string) string { return p }
	}
	a := []string{"--ro-bind", src("/usr"), "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(src(d))
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(src(d)); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", src(d), d)
		}
	}
	if root != "" {
		// Images put toolkits under /opt too (the host's /opt is never bound).
		if fi, err := os.Lstat(src("/opt")); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", src("/opt"), "/opt")
		}
	}
	etc := append([]string{}, etcReadOnly...)
	for _, pat := range etcFromSystem {
		m, _ := filepath.Glob(src(pat))
		for _, p := range m {
			etc = append(etc, "/"+strings.TrimPrefix(strings.TrimPrefix(p, root), "/"))
		}
	}
	if cfg.AllowNetwork {
		etc = append(etc, "/etc/resolv.conf", "/etc/gai.conf", "/etc/host.conf")
	}
	for _, p := range etc {
		from := src(p)
		if root != "" {
			// bwrap follows a source symlink on the host: resolve the
			// environment's own (/etc/localtime -> /usr/share/zoneinfo/...)
			// inside it, so that no host file shows through.
			if r, err := ResolveIn(root, p); err == nil {
				from = r
			}
		}
		a = append(a, "--ro-bind-try", from, p)
	}
	return a
}

// checkRootFS tells whether root looks like a root filesystem a kernel can
// run in: an absolute directory with /usr and the interpreter (resolved
// inside root, since its symlinks are the environment's, not the host's).
func checkRootFS(root, python string) error {
	if !filepath.IsAbs(root) || root != filepath.Clean(root) || root == "/" {
		return fmt.Errorf("root filesystem %q: must be a clean absolute path other than /", root)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr")); err != nil || !fi.IsDir() {
		return fmt.Errorf("root filesystem %s: no /usr directory (%v)", root, err)
	}
	p, err := ResolveIn(root, python)
	if err != nil {
		return fmt.Errorf("root filesystem %s: python %s: %w", root, python, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("root filesystem %s: python %s is not an executable file", root, python)
	}
	return nil
}

// ResolveIn resolves the absolute path p as it would resolve with root as
// "/": symlinks (absolute or relative) are followed inside root, never out
// of it. It returns the host path.
func ResolveIn(root, p string) (string, error) {
	parts := strings.Split(strings.Trim(filepath.Clean("/"+p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		name := parts[0]
		parts = parts[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	return filepath.Join(root, cur), nil
}
