package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestGradeTorchCompileInEnvironment grades, through the server and its
// in-process runner on the cpu profile with --env, a notebook whose
// learner cell runs torch.compile(f, backend="npugraph_ex",
// fullgraph=True) for real, on the environment's CPU stand-in: the
// kernel's torch is the environment's 2.x (the host's, 1.13, has no
// torch.compile), and the runner fleet reports that environment.
func TestGradeTorchCompileInEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	dir := envtest.RequireCPU(t)
	env, err := envs.Store{Dir: filepath.Dir(dir)}.Get(filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	// The kernel imports the stand-in at start: the learner's cell names
	// the backend without importing anything but torch.
	want, err := envs.HashStandIn(envs.EmbeddedStandIn())
	if err != nil || want == "absent" || env.Meta.StandIn != want {
		t.Fatalf("environment %s has stand-in %q, this build embeds %q (%v): rebuild it with `npugrade env build cpu`", env.Name, env.Meta.StandIn, want, err)
	}
	backend := "npugraph_ex"
	t.Parallel()
	fixtures := filepath.Join("testdata", "envcompile")
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			teacher := addUser(t, dbURL, "teacher", "instructor")
			s := startServer(t, dbURL, "--local-runner", "1",
				"--exercises", filepath.Join(fixtures, "exercises"), "--answers", filepath.Join(fixtures, "answers"),
				"--env", "cpu="+env.Name, "--envs-dir", filepath.Dir(dir))
			defer s.stop()

			resp, starter := request(t, "GET", s.url+"/api/v1/exercises/envcompile/notebook", ada, nil, "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("starter: %d %s", resp.StatusCode, starter)
			}
			nb, err := notebook.Parse(starter, notebook.Limits{MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			learner := `import torch

def f(x):
    return torch.sin(x) + 2 * torch.cos(x)

compiled = torch.compile(f, backend="` + backend + `", fullgraph=True)
x = torch.arange(4.0)
print(torch.__version__.split(".")[0], torch.allclose(compiled(x), f(x)))`
			for _, c := range nb.Cells {
				if c.MustGrader().ID == "q1" {
					c.Source = notebook.MultilineString(learner)
				}
			}
			up, err := notebook.Encode(nb)
			if err != nil {
				t.Fatal(err)
			}
			resp, sub := upload(t, s, ada, "envcompile", up, "")
			if resp.StatusCode != 202 {
				t.Fatalf("upload: %d %v", resp.StatusCode, sub)
			}
			graded := waitGraded(t, s, ada, sub["id"].(string))
			if graded["status"] != "graded" || graded["score"] != graded["max_score"] || graded["max_score"] != 1.0 {
				b, _ := json.Marshal(graded)
				t.Fatalf("graded %v/%v: %s", graded["score"], graded["max_score"], b)
			}

			// The fleet shows the in-process runner's environment.
			resp, b := request(t, "GET", s.url+"/api/v1/runners", teacher, nil, "", nil)
			var runners []struct {
				Report struct {
					Environment string `json:"environment"`
					Torch       string `json:"torch"`
					Python      string `json:"python"`
					Verdict     string `json:"verdict"`
				} `json:"report"`
			}
			if err := json.Unmarshal(b, &runners); resp.StatusCode != 200 || err != nil || len(runners) != 1 {
				t.Fatalf("runners: %d %s", resp.StatusCode, b)
			}
			r := runners[0].Report
			if r.Environment != env.Name || !strings.HasPrefix(r.Torch, "2.") || r.Verdict != "ok" {
				t.Errorf("the runner reports %+v, want environment %s with torch 2.x", r, env.Name)
			}
		})
	}
}

// TestEnvCommands runs `npugrade env list` on the built environment and
// the flag parsing of --env.
func TestEnvCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ spec, profile, want string }{
		{"", "cpu", envs.Host}, {"host", "cpu", envs.Host}, {"cpu", "npu-a2", "cpu"},
		{"cpu=cpu,npu-a2=cann9", "npu-a2", "cann9"}, {"cpu=cpu,npu-a2=cann9", "cpu", "cpu"}, {"npu-a2=cann9", "cpu", envs.Host},
		{"auto", "cpu", envAuto}, {"cpu=auto,npu-a2=host", "cpu", envAuto},
	} {
		if got, err := envForProfile(tc.spec, tc.profile); err != nil || got != tc.want {
			t.Errorf("envForProfile(%q, %q) = %q, %v; want %q", tc.spec, tc.profile, got, err, tc.want)
		}
	}
	for _, bad := range []string{"../x", "cpu=", "cpu=UPPER,npu=a/b"} {
		if _, err := envForProfile(bad, "cpu"); err == nil {
			t.Errorf("--env %q accepted", bad)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"env", "list", "--dir", t.TempDir()}, &out, &errb); code != 0 || !strings.Contains(out.String(), "no grading environments") {
		t.Errorf("env list of an empty dir: %d %q %q", code, out.String(), errb.String())
	}
	if code := run(context.Background(), []string{"env", "import", "x"}, &out, &errb); code == 0 {
		t.Error("env import without --tar or --oci succeeded")
	}
	if code := run(context.Background(), []string{"env", "build", "npu-a2"}, &out, &errb); code == 0 {
		t.Error("env build of an NPU environment succeeded")
	}
	// The default (auto or host) runs on the host where no environment is.
	var errs bytes.Buffer
	none := newCommand(context.Background(), "t", "", "")
	choose := envFlags(none)
	if err := none.Parse([]string{"--envs-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if e, err := choose("cpu", &errs); os.Getenv("NPUGRADE_ENV") == "" && (err != nil || e != nil || !strings.Contains(errs.String(), "host's own Python")) {
		t.Errorf("default --env without environments: %v %v %q", e, err, errs.String())
	}
	dir := envtest.RequireCPU(t)
	auto := newCommand(context.Background(), "t", "", "")
	choose = envFlags(auto)
	if err := auto.Parse([]string{"--env", "auto", "--envs-dir", filepath.Dir(dir)}); err != nil {
		t.Fatal(err)
	}
	if e, err := choose(filepath.Base(dir), &errs); err != nil || e == nil || e.Name != filepath.Base(dir) {
		t.Errorf("--env auto for profile %s: %v %v", filepath.Base(dir), e, err)
	}
	if e, err := choose("npu-a2", &errs); err != nil || e != nil {
		t.Errorf("--env auto for a profile without an environment: %v %v", e, err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"env", "list", "--dir", filepath.Dir(dir)}, &out, &errb); code != 0 {
		t.Fatalf("env list: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), filepath.Base(dir)) || !strings.Contains(out.String(), "torch 2.") || !strings.Contains(out.String(), "verdict ok") {
		t.Errorf("env list:\n%s", out.String())
	}
}

// TestRunnerProbeInEnvironment: `npugrade runner --probe --env NAME`
// reports the environment the kernels run in, probed from inside it, not
// the host's Python; with --env host it says host.
func TestRunnerProbeInEnvironment(t *testing.T) {
	dir := envtest.RequireCPU(t)
	t.Parallel()
	probe := func(args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"runner", "--probe", "--envs-dir", filepath.Dir(dir)}, args...), &out, &errb)
		var rep map[string]any
		if err := json.Unmarshal(out.Bytes(), &rep); code != 0 || err != nil {
			t.Fatalf("runner --probe %v: exit %d, %v: %s %s", args, code, err, out.String(), errb.String())
		}
		return rep
	}
	inEnv := probe("--env", filepath.Base(dir))
	host := probe("--env", "host")
	t.Logf("in the environment: %v\non the host: %v", inEnv, host)
	if inEnv["environment"] != filepath.Base(dir) || !strings.HasPrefix(inEnv["torch"].(string), "2.") || inEnv["profile"] != "cpu" {
		t.Errorf("runner --probe --env %s: %v", filepath.Base(dir), inEnv)
	}
	if host["environment"] != "host" || host["python"] == inEnv["python"] || host["fingerprint"] == inEnv["fingerprint"] {
		t.Errorf("runner --probe --env host: %v", host)
	}
}
