package envprobe

import (
	"strings"
	"testing"
)

func TestParseToolkitInstallInfoRecordings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file                       string
		version, inner, arch, path string
		layout                     string
		compatible                 int
	}{
		{"ascend_toolkit_install.cann-8.0.0.x86_64.info", "8.0.0", "V100R001C20SPC001B251", "x86_64", "/usr/local/Ascend/ascend-toolkit/8.0.0/x86_64-linux", "ascend-toolkit", 5},
		{"ascend_toolkit_install.cann-8.1.RC1.info", "8.1.RC1", "V100R001C21SPC001B238", "aarch64", "/usr/local/Ascend/ascend-toolkit/8.1.RC1/aarch64-linux", "ascend-toolkit", 5},
		{"ascend_toolkit_install.cann-8.2.RC1.info", "8.2.RC1", "V100R001C22SPC001B231", "aarch64", "/usr/local/Ascend/ascend-toolkit/8.2.RC1/aarch64-linux", "ascend-toolkit", 6},
		{"ascend_toolkit_install.cann-8.3.RC1.info", "8.3.RC1", "V100R001C23SPC001B235", "aarch64", "/usr/local/Ascend/ascend-toolkit/8.3.RC1/aarch64-linux", "ascend-toolkit", 6},
		{"ascend_toolkit_install.cann-8.3.RC2.x86_64.info", "8.3.RC2", "V100R001C23SPC002B210", "x86_64", "/usr/local/Ascend/ascend-toolkit/8.3.RC2/x86_64-linux", "ascend-toolkit", 6},
		// New layout: path is the cann-<version> directory itself.
		{"ascend_toolkit_install.cann-8.5.0.info", "8.5.0", "V100R001C25SPC001B232", "aarch64", "/usr/local/Ascend/cann-8.5.0", "cann", 6},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := ParseToolkitInstallInfo(recording(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got.PackageName != "Ascend-cann-toolkit" || got.Version != tt.version || got.InnerVersion != tt.inner ||
				got.Arch != tt.arch || got.Path != tt.path || got.OS != "linux" {
				t.Errorf("got %+v", got)
			}
			if got.Layout() != tt.layout {
				t.Errorf("layout = %q, want %q", got.Layout(), tt.layout)
			}
			if len(got.CompatibleVersions) != tt.compatible || got.CompatibleVersions[0] != "V100R001C15" {
				t.Errorf("compatible = %q", got.CompatibleVersions)
			}
		})
	}
}

func TestParseToolkitInstallInfoVariants(t *testing.T) {
	t.Parallel()
	got, err := ParseToolkitInstallInfo("# comment\r\nVersion = \"9.0.0\"\r\nPath='/opt/cann'\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "9.0.0" || got.Path != "/opt/cann" {
		t.Errorf("got %+v", got)
	}
	if _, err := ParseToolkitInstallInfo("package_name=Ascend-cann-toolkit\narch=aarch64\n"); err == nil ||
		!strings.Contains(err.Error(), "ascend_toolkit_install.info") {
		t.Errorf("missing version: err = %v", err)
	}
}

func TestParseSoCInfoRecording(t *testing.T) {
	t.Parallel()
	got, err := ParseSoCInfo(recording(t, "platform_config.Ascend910B2.SoCInfo.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := SoCInfo{AICoreCount: 24, CubeCoreCount: 24, VectorCoreCount: 48, MemorySize: 68719476736, L2Size: 201326592}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseSoCInfoSections(t *testing.T) {
	t.Parallel()
	ini := "[version]\nai_core_cnt=99\n\n[SoCInfo]\nai_core_cnt=32\nvector_core_cnt=64\n[AICoreSpec]\nvector_core_cnt=1\n"
	got, err := ParseSoCInfo(ini)
	if err != nil {
		t.Fatal(err)
	}
	if got.AICoreCount != 32 || got.VectorCoreCount != 64 || got.CubeCoreCount != 0 {
		t.Errorf("got %+v: read keys outside [SoCInfo]", got)
	}
	for name, text := range map[string]string{
		"no section":     "ai_core_cnt=24\n",
		"no ai_core_cnt": "[SoCInfo]\nvector_core_cnt=48\n",
		"bad number":     "[SoCInfo]\nai_core_cnt=twenty\n",
	} {
		if _, err := ParseSoCInfo(text); err == nil || !strings.HasPrefix(err.Error(), "parse SoCInfo") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
