package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization the manifests
// use; any other field is an error, like an unknown field in a manifest.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag"`
	} `json:"images,omitempty"`
	Patches []struct {
		Path   string `json:"path"`
		Target *struct {
			Group   string `json:"group,omitempty"`
			Version string `json:"version,omitempty"`
			Kind    string `json:"kind"`
			Name    string `json:"name"`
		} `json:"target,omitempty"`
	} `json:"patches,omitempty"`
}

// jsonPatchOp is one RFC 6902 operation of a patch file.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// decoded is every object of the manifests, by file.
type decoded struct {
	deployments map[string]*appsv1.Deployment
	secrets     map[string]*corev1.Secret
	kustomize   map[string]*kustomization
}

// decodeAll reads every file under the directory strictly: a typo in a
// field name (or a field of another API version) fails the test instead
// of being dropped by kubectl.
func decodeAll(t *testing.T) decoded {
	t.Helper()
	d := decoded{deployments: map[string]*appsv1.Deployment{}, secrets: map[string]*corev1.Secret{}, kustomize: map[string]*kustomization{}}
	files := 0
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case filepath.Base(path) == "kustomization.yaml":
			var k kustomization
			if err := yaml.UnmarshalStrict(b, &k); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			d.kustomize[path] = &k
		case strings.HasSuffix(path, ".json"):
			var ops []jsonPatchOp
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ops); err != nil || len(ops) == 0 {
				t.Errorf("%s: not a JSON patch: %v", path, err)
			}
		case strings.HasSuffix(path, ".yaml"):
			for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
				if strings.TrimSpace(doc) != "" {
					decodeObject(t, path, i, []byte(doc), &d)
				}
			}
		default:
			return nil
		}
		files++
		return nil
	})
	if err != nil || files < 10 {
		t.Fatalf("walk: %v (%d files)", err, files)
	}
	return d
}

func decodeObject(t *testing.T, path string, i int, doc []byte, d *decoded) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Errorf("%s #%d: %v", path, i, err)
		return
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		dep := &appsv1.Deployment{}
		d.deployments[path], obj = dep, dep
	case "v1 Secret":
		s := &corev1.Secret{}
		d.secrets[path], obj = s, s
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	default:
		t.Errorf("%s #%d: %s %s is not a kind this test knows: add it", path, i, tm.APIVersion, tm.Kind)
		return
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Errorf("%s #%d (%s): %v", path, i, tm.Kind, err)
	}
}

// TestManifests: every manifest decodes strictly, every kustomization
// names files that exist, and the base's workloads follow the rules:
// resource requests, probes on the server, secrets only by reference,
// pinned image tags, one NPU per runner pod with a grace period longer
// than its drain, and no privileged container.
func TestManifests(t *testing.T) {
	d := decodeAll(t)
	for path, k := range d.kustomize {
		for _, r := range append(append([]string{}, k.Resources...), patchPaths(k)...) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), r)); err != nil {
				t.Errorf("%s names %s: %v", path, r, err)
			}
		}
		for _, im := range k.Images {
			if im.NewTag == "" || im.NewTag == "latest" {
				t.Errorf("%s: image %s has tag %q: pin a version", path, im.Name, im.NewTag)
			}
		}
	}
	base := d.kustomize[filepath.Join("base", "kustomization.yaml")]
	if base == nil {
		t.Fatal("no base/kustomization.yaml")
	}
	server, runner := d.deployments[filepath.Join("base", "server-deployment.yaml")], d.deployments[filepath.Join("base", "runner-npu-deployment.yaml")]
	if server == nil || runner == nil {
		t.Fatalf("base server or runner Deployment missing: %v", d.deployments)
	}
	if server.Spec.Replicas == nil || *server.Spec.Replicas < 2 {
		t.Error("the server runs several replicas on one Postgres")
	}
	for path, dep := range d.deployments {
		if strings.HasPrefix(path, "base") {
			checkPod(t, path, dep.Spec.Template.Spec, base)
		}
	}
	c := runner.Spec.Template.Spec.Containers[0]
	npu := corev1.ResourceName("huawei.com/Ascend910")
	if q := c.Resources.Limits[npu]; q.Cmp(resource.MustParse("1")) != 0 || c.Resources.Requests[npu] != q {
		t.Errorf("a runner pod requests exactly one NPU (requests = limits = 1): %v / %v", c.Resources.Requests, c.Resources.Limits)
	}
	if g := runner.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= 45 || !contains(c.Args, "45s") {
		t.Errorf("the runner's grace period must outlast its --drain-timeout 45s: %v %v", g, c.Args)
	}
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !contains(capNames(sc.Capabilities.Drop), "ALL") {
		t.Errorf("the runner drops every capability but those the sandbox needs and is not privileged: %+v", sc)
	}
	for path, s := range d.secrets {
		for k, v := range s.StringData {
			if !strings.Contains(v, "REPLACE") {
				t.Errorf("%s: %s holds a value, not a placeholder: secrets are not committed", path, k)
			}
		}
		if len(s.Data) > 0 {
			t.Errorf("%s: data holds values", path)
		}
	}
}

func patchPaths(k *kustomization) []string {
	var out []string
	for _, p := range k.Patches {
		out = append(out, p.Path)
	}
	return out
}

var secretName = regexp.MustCompile(`(?i)token|password|secret|dsn|database|_DB$`)

// checkPod applies the rules to one pod template of the base.
func checkPod(t *testing.T, path string, pod corev1.PodSpec, base *kustomization) {
	t.Helper()
	for _, c := range pod.Containers {
		where := path + ": container " + c.Name
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: needs cpu and memory requests and a memory limit: %+v", where, c.Resources)
		}
		if !pinned(c.Image, base) {
			t.Errorf("%s: image %q is not pinned to a version", where, c.Image)
		}
		if len(c.Ports) > 0 {
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if p == nil || p.HTTPGet == nil || (p.HTTPGet.Path != "/healthz" && p.HTTPGet.Path != "/readyz") {
					t.Errorf("%s: serves HTTP, so needs readiness and liveness probes on /readyz or /healthz: %+v", where, p)
				}
			}
		}
		for _, e := range c.Env {
			if secretName.MatchString(e.Name) && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s: %s must come from a Secret (valueFrom.secretKeyRef), not a literal", where, e.Name)
			}
			if regexp.MustCompile(`://[^/\s]+:[^@\s]+@`).MatchString(e.Value) {
				t.Errorf("%s: %s holds credentials in a literal", where, e.Name)
			}
		}
	}
}

// pinned: a tag that is not latest, or a name the kustomization maps to one.
func pinned(image string, k *kustomization) bool {
	for _, im := range k.Images {
		if im.Name == image {
			return im.NewTag != "" && im.NewTag != "latest"
		}
	}
	i := strings.LastIndex(image, ":")
	return i > 0 && !strings.Contains(image[i:], "/") && image[i+1:] != "latest"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func capNames(cs []corev1.Capability) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
