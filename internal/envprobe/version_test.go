package envprobe

import (
	"regexp"
	"testing"
)

func TestParsePyVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		release string
		pre     string
		post    int
		dev     bool
		local   string
	}{
		{"2.1.0+cpu", "2.1.0", "", -1, false, "cpu"},
		{"2.1.0.post3", "2.1.0", "", 3, false, ""},
		{"2.1.0.post17", "2.1.0", "", 17, false, ""},
		{"2.9.0", "2.9.0", "", -1, false, ""},
		{"2.9.0.dev20260101", "2.9.0", "", -1, true, ""},
		{"2.10.0.dev20260315+cpu", "2.10.0", "", -1, true, "cpu"},
		{"1.13.0a0", "1.13.0", "a0", -1, false, ""},
		{"1.13.0a0+gitabcdef", "1.13.0", "a0", -1, false, "gitabcdef"},
		{"2.6.0rc1", "2.6.0", "rc1", -1, false, ""},
	}
	for _, tt := range tests {
		got, err := ParsePyVersion(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got.Release != tt.release || got.Pre != tt.pre || got.Post != tt.post || got.IsDev != tt.dev || got.Local != tt.local {
			t.Errorf("%s: got %+v", tt.in, got)
		}
		if IsDevBuild(tt.in) != tt.dev {
			t.Errorf("IsDevBuild(%s) = %v", tt.in, !tt.dev)
		}
	}
	if _, err := ParsePyVersion("not a version"); err == nil {
		t.Error("parsed garbage")
	}
	if BaseVersion("garbage!") != "garbage!" {
		t.Error("BaseVersion of garbage should return it unchanged")
	}
}

// The recorded sessions print torch and torch_npu versions as real hosts have them.
func TestVersionsFromRecordings(t *testing.T) {
	t.Parallel()
	ipy := recording(t, "python-versions.ipython.torch-2.1.0-torch_npu-2.1.0.post3.txt")
	outs := regexp.MustCompile(`Out\[\d+\]: '([^']+)'`).FindAllStringSubmatch(ipy, -1)
	if len(outs) != 2 {
		t.Fatalf("outputs = %q", outs)
	}
	torch, npu := outs[0][1], outs[1][1]
	if torch != "2.1.0+cpu" || npu != "2.1.0.post3" {
		t.Fatalf("torch %q torch_npu %q", torch, npu)
	}
	if BaseVersion(torch) != BaseVersion(npu) {
		t.Errorf("bases differ: %s vs %s", BaseVersion(torch), BaseVersion(npu))
	}
	if v, _ := ParsePyVersion(npu); v.Post != 3 {
		t.Errorf("post = %d", v.Post)
	}

	soc := recording(t, "python-versions.torch-2.10.0-torch_npu-2.10.0-soc104.txt")
	m := regexp.MustCompile(`(?m)^torch (\S+)\ntorch_npu (\S+)$`).FindStringSubmatch(soc)
	if m == nil || BaseVersion(m[1]) != "2.10.0" || BaseVersion(m[2]) != "2.10.0" || IsDevBuild(m[2]) {
		t.Errorf("got %q", m)
	}
}

func TestNormalizeCANN(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, prefix, suffix string }{
		{"8.5.0", "8.5.0", ""},
		{"8.3.RC1", "8.3.RC1", ""},
		{"8.3.rc1", "8.3.RC1", ""},
		{"9.0.0", "9.0.0", ""},
		{"8.5.0.B120", "8.5.0", ".B120"},
		{"9.2.0-beta.2", "9.2.0", "-beta.2"},
		{"8.3.RC1.alpha003", "8.3.RC1", ".alpha003"},
		{"8.3.RC10", "8.3.RC10", ""},
		{"8.5.10", "8.5.10", ""},
		{" 8.0.RC3\n", "8.0.RC3", ""},
	}
	for _, tt := range tests {
		p, s, ok := NormalizeCANN(tt.in)
		if !ok || p != tt.prefix || s != tt.suffix {
			t.Errorf("NormalizeCANN(%q) = %q, %q, %v", tt.in, p, s, ok)
		}
	}
	for _, bad := range []string{"", "8.5", "CANN", "v8.5.0"} {
		if _, _, ok := NormalizeCANN(bad); ok {
			t.Errorf("NormalizeCANN(%q) ok", bad)
		}
	}
	// The LlamaFactory report carries torch.version.cann as printed on an A2 host.
	m := regexp.MustCompile(`CANN version: (\S+)`).FindStringSubmatch(recording(t, "llamafactory-cli-env.a2-910b3-cann-8.0.RC3.txt"))
	if p, _, ok := NormalizeCANN(m[1]); !ok || p != "8.0.RC3" {
		t.Errorf("recorded CANN %q normalised to %q", m[1], p)
	}
}

func TestCompareReleases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"26.0.0", "7.3.0", 1}, // numeric, not lexical
		{"7.3.0", "26.0.0", -1},
		{"7.3.0", "7.3.0", 0},
		{"7.3", "7.3.0", 0},
		{"7.10.0", "7.9.0", 1},
		{"master", "26.0.0", 1},
		{"26.0.0", "master", -1},
		{"master", "master", 0},
		{"v7.2.0", "7.2.0", 0},
	}
	for _, tt := range tests {
		got, err := CompareReleases(tt.a, tt.b)
		if err != nil || got != tt.want {
			t.Errorf("CompareReleases(%s, %s) = %d, %v; want %d", tt.a, tt.b, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "7.x", "latest", "7.3.0-rc1"} {
		if _, err := CompareReleases(bad, "7.3.0"); err == nil {
			t.Errorf("CompareReleases(%q) accepted", bad)
		}
	}
}

func TestPythonMinor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"3.11.2": "3.11",
		"3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]": "3.11",
		"3.9.18": "3.9",
		"":       "",
		"python": "",
	} {
		if got := PythonMinor(in); got != want {
			t.Errorf("PythonMinor(%q) = %q, want %q", in, got, want)
		}
	}
}
