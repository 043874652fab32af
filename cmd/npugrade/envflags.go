package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/npugrade/npugrade/internal/envs"
)

// envChooser resolves --env for a profile: the environment its kernels
// run in, or nil for the host's own system.
type envChooser func(profile string, stderr io.Writer) (*envs.Env, error)

var (
	envEnv     = envVar{"NPUGRADE_ENV", "grading environment(s), the default of --env (host, NAME or PROFILE=NAME,...)"}
	envEnvsDir = envVar{"NPUGRADE_ENVS_DIR", "directory of the grading environments, the default of --envs-dir/--dir"}
)

// envAuto picks, per profile, the environment of the profile's name when
// it has been built or imported, else the host.
const envAuto = "auto"

// defaultEnv is --env's default: the environment named like the profile
// where it is built (the exercises are written for the cpu environment's
// PyTorch 2.x and its npugraph_ex stand-in), else the host.
const defaultEnv = envAuto

// envFlags registers --env and --envs-dir (serve, runner and check).
func envFlags(fs *command) envChooser {
	fs.env = append(fs.env, envEnv, envEnvsDir)
	spec := fs.String("env", envOr("NPUGRADE_ENV", defaultEnv), "grading environment the kernels run in: one name for every profile, or per profile (cpu=cpu,npu-a2=npu-a2); host runs them on this machine's own Python; auto is the environment named like the profile when it exists, else host (see npugrade env list)")
	dir := fs.String("envs-dir", envOr("NPUGRADE_ENVS_DIR", envs.DefaultDir), "directory of the grading environments")
	return func(profile string, stderr io.Writer) (*envs.Env, error) {
		w := fs.words()
		name, err := envForProfile(*spec, profile)
		if err != nil {
			return nil, errors.New(w.flagProblem(err))
		}
		if name == envAuto {
			name = envs.Host
			if e, err := (envs.Store{Dir: *dir}).Get(profile); err == nil {
				name = e.Name
			}
		}
		if name == envs.Host {
			fmt.Fprintln(stderr, "npugrade:", w.F("profile %s: kernels run on the host's own Python (--env host), not in a grading environment", profile))
			return nil, nil
		}
		e, err := envs.Store{Dir: *dir}.Get(name)
		if err != nil {
			return nil, w.Errorf("--env: %s", w.flagProblem(err))
		}
		fmt.Fprintln(stderr, "npugrade:", w.F("profile %s: kernels run in the grading environment %s (%s)", profile, e.Name, e.Root()))
		return &e, nil
	}
}

// envForProfile reads an --env value: "NAME" for every profile, or
// "PROFILE=NAME,..." (profiles not listed run on the host).
func envForProfile(spec, profile string) (string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return envs.Host, nil
	}
	if !strings.Contains(spec, "=") {
		if spec != envs.Host && spec != envAuto {
			if err := envs.CheckName(spec); err != nil {
				return "", fmt.Errorf("--env: %w", err)
			}
		}
		return spec, nil
	}
	name := envs.Host
	var errs []string
	for _, kv := range strings.Split(spec, ",") {
		p, n, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || p == "" || n == "" {
			errs = append(errs, fmt.Sprintf("%q is not PROFILE=NAME", kv))
			continue
		}
		if n != envs.Host && n != envAuto {
			if err := envs.CheckName(n); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		if p == profile {
			name = n
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("--env %q: %s", spec, strings.Join(errs, "; "))
	}
	return name, nil
}
