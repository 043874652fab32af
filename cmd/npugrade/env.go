package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/sandbox"
)

const envUsage = `usage: npugrade env <subcommand> [flags]

A grading environment is a root filesystem the kernels run in (serve, runner
and check take --env NAME); its report comes from the probe run inside it.

subcommands:
  build cpu        build the cpu environment with debootstrap (Debian 13, PyTorch 2.x); reused when up to date
  import NAME      import an image: --tar FILE (docker export) or --oci DIR (OCI image layout)
  list             each environment with its report and verdict against the version table
  rm NAME          delete an environment

Run 'npugrade env <subcommand> --help' for its flags.
`

func cmdEnv(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	w := wordsOf(ctx)
	if len(args) == 0 {
		fmt.Fprint(stderr, w.T("npugrade env: missing subcommand (build, import, list or rm)")+"\n\n"+w.T(envUsage))
		return exitError
	}
	sub := args[0]
	about := map[string]string{
		"build":  "Build the cpu grading environment with debootstrap, or reuse it when its packages and stand-in are unchanged.",
		"import": "Import a grading environment from a `docker export` tarball (--tar) or an unpacked OCI image layout (--oci).",
		"list":   "List the grading environments with their reports and verdicts.",
		"rm":     "Delete a grading environment.",
	}
	argSyn := map[string]string{"build": "cpu", "import": "NAME", "list": "", "rm": "NAME"}
	switch {
	case sub == "-h" || sub == "-help" || sub == "--help" || sub == "help":
		fmt.Fprint(stdout, w.T(envUsage))
		return exitOK
	case about[sub] == "":
		fmt.Fprint(stderr, w.F("npugrade env: unknown subcommand %q\n\n", sub)+w.T(envUsage))
		return exitError
	}
	fs := newCommand(ctx, "env "+sub, argSyn[sub], about[sub], envEnvsDir)
	dir := fs.String("dir", envOr("NPUGRADE_ENVS_DIR", envs.DefaultDir), "directory of the grading environments")
	switch sub {
	case "build":
		return envBuild(ctx, fs, dir, args[1:], stdout, stderr)
	case "import":
		return envImport(ctx, fs, dir, args[1:], stdout, stderr)
	case "list":
		return envList(ctx, fs, dir, args[1:], stdout, stderr)
	}
	pos, code, ok := fs.parse(args[1:], 1, 1, stdout, stderr)
	if !ok {
		return code
	}
	if err := (envs.Store{Dir: *dir}).Remove(pos[0]); err != nil {
		fmt.Fprintln(stderr, "npugrade env rm:", err)
		return exitError
	}
	return exitOK
}

func envBuild(ctx context.Context, fs *command, dir *string, args []string, stdout, stderr io.Writer) int {
	mirror := fs.String("mirror", envOr("NPUGRADE_DEBIAN_MIRROR", ""), "Debian mirror (default: the one apt uses here, else deb.debian.org)")
	force := fs.Bool("force", false, "rebuild even if the environment is up to date")
	standIn := fs.String("stand-in", "", "directory of the npugraph_ex_cpu package to install (default: the one built into npugrade)")
	fs.env = append(fs.env, envVar{"NPUGRADE_DEBIAN_MIRROR", "Debian mirror, the default of --mirror"})
	pos, code, ok := fs.parse(args, 1, 1, stdout, stderr)
	if !ok {
		return code
	}
	if pos[0] != "cpu" {
		return fs.usageError(stderr, fs.words().F("only the cpu environment is built (got %q); import NPU images with `npugrade env import`", pos[0]))
	}
	o := envs.BuildOptions{Name: pos[0], Mirror: *mirror, Force: *force, Progress: stdout}
	if *standIn != "" {
		o.StandIn = os.DirFS(*standIn)
	}
	s := envs.Store{Dir: *dir}
	res, err := s.Build(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade env build:", err)
		return exitError
	}
	if res.Action == "reused" && res.Env.Meta.Report != nil {
		fmt.Fprintln(stdout, res.Env.Summary())
		return exitOK
	}
	return probeAndSave(ctx, s, res.Env, stdout, stderr)
}

func envImport(ctx context.Context, fs *command, dir *string, args []string, stdout, stderr io.Writer) int {
	tarFile := fs.String("tar", "", "a docker export tarball `FILE` (gzip allowed; - reads stdin)")
	oci := fs.String("oci", "", "an unpacked OCI image layout `DIR` (index.json, blobs/), e.g. from skopeo copy docker://IMAGE oci:DIR")
	pos, code, ok := fs.parse(args, 1, 1, stdout, stderr)
	if !ok {
		return code
	}
	if (*tarFile == "") == (*oci == "") {
		return fs.usageError(stderr, fs.words().T("give exactly one of --tar or --oci"))
	}
	name := pos[0]
	s := envs.Store{Dir: *dir}
	var e envs.Env
	var err error
	if *oci != "" {
		fmt.Fprint(stdout, fs.words().F("npugrade env: importing %s from the OCI layout %s\n", name, *oci))
		e, err = s.ImportOCI(ctx, name, *oci)
	} else {
		in := os.Stdin
		if *tarFile != "-" {
			if in, err = os.Open(*tarFile); err != nil {
				fmt.Fprintln(stderr, "npugrade env import:", err)
				return exitError
			}
			defer in.Close()
		}
		fmt.Fprint(stdout, fs.words().F("npugrade env: importing %s from %s\n", name, *tarFile))
		e, err = s.ImportTar(ctx, name, in, *tarFile)
	}
	if err != nil {
		fmt.Fprintln(stderr, "npugrade env import:", err)
		return exitError
	}
	return probeAndSave(ctx, s, e, stdout, stderr)
}

func envList(ctx context.Context, fs *command, dir *string, args []string, stdout, stderr io.Writer) int {
	probe := fs.Bool("probe", false, "probe every environment again (from inside it) instead of showing its last report")
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	s := envs.Store{Dir: *dir}
	list, err := s.List()
	if err != nil {
		fmt.Fprintln(stderr, "npugrade env list:", err)
		return exitError
	}
	if len(list) == 0 {
		fmt.Fprint(stdout, fs.words().F("no grading environments in %s (kernels run on the host); build one with `npugrade env build cpu`\n", *dir))
		return exitOK
	}
	code := exitOK
	for _, e := range list {
		if *probe || e.Meta.Report == nil {
			if c := probeAndSave(ctx, s, e, io.Discard, stderr); c != exitOK {
				code = c
			}
			if e, err = s.Get(e.Name); err != nil {
				fmt.Fprintln(stderr, "npugrade env list:", err)
				return exitError
			}
		}
		fmt.Fprintln(stdout, e.Summary())
	}
	return code
}

// probeAndSave probes e from inside and records the report in env.json.
// An NPU image probed here sees no NPU (none is bound): its report shows
// the versions it ships; runners probe it again with their devices.
func probeAndSave(ctx context.Context, s envs.Store, e envs.Env, stdout, stderr io.Writer) int {
	cpuOnly := e.Meta.Source == envs.SourceDebootstrap
	rep, err := envs.Probe(ctx, e, sandbox.DefaultConfig(), cpuOnly)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade env: probe", e.Name+":", err)
		return exitError
	}
	if err := s.SaveReport(e, rep); err != nil {
		fmt.Fprintln(stderr, "npugrade env:", err)
		return exitError
	}
	e.Meta.Report = &rep
	fmt.Fprintln(stdout, e.Summary())
	if rep.Verdict == envprobe.VerdictUnsupported {
		return exitMismatch
	}
	return exitOK
}
