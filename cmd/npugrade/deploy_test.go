package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// dockerStage is one stage of the Dockerfile: its base, name and
// instructions (continuation lines joined).
type dockerStage struct {
	from, name string
	lines      []string
}

// parseDockerfile reads the Dockerfile as the builder would: comments
// dropped, "\" continuations joined, global ARGs before the first FROM.
func parseDockerfile(t *testing.T, path string) (globalArgs map[string]string, stages []dockerStage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
	globalArgs = map[string]string{}
	var logical []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s ends inside a continued line: %q", path, cur.String())
	}
	for _, l := range logical {
		fields := strings.Fields(l)
		instr := strings.ToUpper(fields[0])
		if !slices.Contains(known, instr) {
			t.Errorf("%s: unknown instruction %q", path, l)
			continue
		}
		switch {
		case instr == "FROM":
			st := dockerStage{}
			args := fields[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				args = args[1:]
			}
			if len(args) == 0 {
				t.Fatalf("%s: FROM without an image: %q", path, l)
			}
			st.from = args[0]
			if len(args) == 3 && strings.EqualFold(args[1], "AS") {
				st.name = args[2]
			}
			stages = append(stages, st)
		case instr == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(fields[1], "=")
			globalArgs[k] = v
		case len(stages) == 0:
			t.Errorf("%s: %s before the first FROM", path, instr)
		default:
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, l)
		}
	}
	return globalArgs, stages
}

// composeBuild is a service's build: "." or {context, target, args}.
type composeBuild struct {
	Context, Target string
	Args            map[string]string
}

func (b *composeBuild) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	var full struct {
		Context string            `yaml:"context"`
		Target  string            `yaml:"target"`
		Args    map[string]string `yaml:"args"`
	}
	if err := n.Decode(&full); err != nil {
		return err
	}
	*b = composeBuild(full)
	return nil
}

// TestDockerfileAndCompose checks the images without an engine: the cpu
// runner stage is Debian 13 with PyTorch 2.x, the npu runner stage is built
// FROM the CANN image given as a build argument with the linux/arm64
// runner, every COPY --from names an earlier stage, and docker-compose.yml
// builds each runner from its stage (the npu one under the npu profile).
func TestDockerfileAndCompose(t *testing.T) {
	t.Parallel()
	args, stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	byName := map[string]dockerStage{}
	for i, st := range stages {
		for _, l := range st.lines {
			if from, ok := strings.CutPrefix(strings.Fields(l + " x")[1], "--from="); ok && strings.HasPrefix(l, "COPY") {
				if _, earlier := byName[from]; !earlier {
					t.Errorf("stage %d (%s): COPY --from=%s names no earlier stage", i, st.name, from)
				}
			}
		}
		byName[st.name] = st
	}
	if last := stages[len(stages)-1].name; last != "runtime" {
		t.Errorf("the last (default) stage is %q, want the server's runtime", last)
	}
	all := func(st dockerStage) string { return strings.Join(st.lines, "\n") }

	cpu, ok := byName["runner-cpu"]
	if !ok {
		t.Fatal("no runner-cpu stage")
	}
	if !strings.HasPrefix(cpu.from, "debian:trixie") {
		t.Errorf("runner-cpu is FROM %s, want Debian 13 (trixie)", cpu.from)
	}
	for _, pkg := range []string{"python3-torch", "python3-ipykernel", "python3-nbconvert", "python3-numpy", "bubblewrap"} {
		if !strings.Contains(all(cpu), pkg) {
			t.Errorf("runner-cpu does not install %s", pkg)
		}
	}
	if !strings.Contains(all(cpu), "npugraph_ex_cpu") || !strings.Contains(all(cpu), "COPY --from=build ") {
		t.Error("runner-cpu lacks the stand-in or the runner binary")
	}

	npu, ok := byName["runner-npu"]
	if !ok {
		t.Fatal("no runner-npu stage")
	}
	if npu.from != "${CANN_IMAGE}" || args["CANN_IMAGE"] != "cann_9.0.0_py3.11-A2-arm" {
		t.Errorf("runner-npu is FROM %q with CANN_IMAGE default %q", npu.from, args["CANN_IMAGE"])
	}
	if !strings.Contains(all(npu), "COPY --from=build-arm64 ") || !strings.Contains(all(byName["build-arm64"]), "GOARCH=arm64") {
		t.Error("runner-npu does not get the linux/arm64 runner binary")
	}
	for _, want := range []string{"nbconvert", "ipykernel", "bubblewrap"} {
		if !strings.Contains(all(npu), want) {
			t.Errorf("runner-npu does not install %s", want)
		}
	}

	raw, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Build    composeBuild `yaml:"build"`
			Image    string       `yaml:"image"`
			Platform string       `yaml:"platform"`
			Profiles []string     `yaml:"profiles"`
			Command  []string     `yaml:"command"`
			Devices  []string     `yaml:"devices"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	rc, rn := compose.Services["runner-cpu"], compose.Services["runner-npu"]
	if rc.Build.Target != "runner-cpu" || rc.Build.Context != "." {
		t.Errorf("runner-cpu builds %+v", rc.Build)
	}
	if rn.Build.Target != "runner-npu" || !slices.Contains(rn.Profiles, "npu") || rn.Platform != "linux/arm64" ||
		!strings.Contains(rn.Build.Args["CANN_IMAGE"], "cann_9.0.0_py3.11-A2-arm") {
		t.Errorf("runner-npu: build %+v, profiles %v, platform %q", rn.Build, rn.Profiles, rn.Platform)
	}
	if !slices.Contains(rn.Devices, "/dev/davinci_manager") {
		t.Errorf("runner-npu devices %v", rn.Devices)
	}
	for name, svc := range map[string][]string{"runner-cpu": rc.Command, "runner-npu": rn.Command} {
		if len(svc) == 0 || svc[0] != "runner" || !slices.Contains(svc, "--env") {
			t.Errorf("%s command %v: want a runner that says its --env", name, svc)
		}
	}
}
