package envprobe

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
)

// versionTableJSON is the only place the version matrix is written down.
//
//go:embed versiontable.json
var versionTableJSON []byte

// Row is one line of the TorchAir version table: a torch_npu build and the
// stack it was released with.
type Row struct {
	TorchAir       string   `json:"torchair"`         // TorchAir release branch, e.g. "7.3.0"
	TorchNPU       string   `json:"torch_npu"`        // exact torch_npu.__version__, e.g. "2.8.0.post2"
	TorchNPUBranch string   `json:"torch_npu_branch"` // Ascend/pytorch branch, e.g. "v2.8.0-7.3.0"
	Torch          string   `json:"torch"`            // torch base version, e.g. "2.8.0"
	CANN           string   `json:"cann"`             // normalised CANN version, e.g. "8.5.0" or "8.3.RC1"
	Python         []string `json:"python"`           // supported "major.minor" versions
}

// ProductRule maps a torch.npu.get_device_name() pattern to a product.
type ProductRule struct {
	Product string `json:"product"` // "A2", "A3", "950"
	Name    string `json:"name"`    // human-readable, e.g. "Atlas A2"
	Pattern string `json:"pattern"` // regexp on the device name
	Profile string `json:"profile"` // runner profile, e.g. "npu-a2"
	Note    string `json:"note,omitempty"`

	re *regexp.Regexp
}

// Feature is a TorchAir capability gated by release (and optionally product).
type Feature struct {
	Name string `json:"name"`
	// Since is the first release with the feature; "master" for features
	// that no numbered release has yet.
	Since string `json:"since"`
	// Until is the last release with the feature (inclusive); empty when it
	// is still present.
	Until    string   `json:"until,omitempty"`
	Products []string `json:"products,omitempty"` // empty: every supported product
	Note     string   `json:"note,omitempty"`
}

// VersionTable is the decoded versiontable.json.
type VersionTable struct {
	Source   string        `json:"source"`
	Rows     []Row         `json:"rows"`
	Products []ProductRule `json:"products"`
	Features []Feature     `json:"features"`
}

var loadTable = sync.OnceValues(func() (*VersionTable, error) {
	return parseVersionTable(versionTableJSON)
})

// Table returns the embedded version table. It panics if the embedded file is
// invalid, which TestVersionTable rules out at build time.
func Table() *VersionTable {
	t, err := loadTable()
	if err != nil {
		panic(err)
	}
	return t
}

func parseVersionTable(data []byte) (*VersionTable, error) {
	var t VersionTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("version table: %w", err)
	}
	seen := map[string]bool{}
	for _, r := range t.Rows {
		if seen[r.TorchNPU] {
			return nil, fmt.Errorf("version table: torch_npu %q listed twice", r.TorchNPU)
		}
		seen[r.TorchNPU] = true
		if _, err := parseRelease(r.TorchAir); err != nil {
			return nil, fmt.Errorf("version table: row %s: %w", r.TorchNPU, err)
		}
		if base := BaseVersion(r.TorchNPU); base != r.Torch {
			return nil, fmt.Errorf("version table: row %s: torch %s differs from torch_npu base %s", r.TorchNPU, r.Torch, base)
		}
		if p, suffix, ok := NormalizeCANN(r.CANN); !ok || suffix != "" || p != r.CANN {
			return nil, fmt.Errorf("version table: row %s: CANN %q is not a normalised version", r.TorchNPU, r.CANN)
		}
	}
	for i := range t.Products {
		re, err := regexp.Compile(t.Products[i].Pattern)
		if err != nil {
			return nil, fmt.Errorf("version table: product %s: %w", t.Products[i].Product, err)
		}
		t.Products[i].re = re
	}
	for _, f := range t.Features {
		if _, err := parseRelease(f.Since); err != nil {
			return nil, fmt.Errorf("version table: feature %s: since: %w", f.Name, err)
		}
		if f.Until != "" {
			if _, err := parseRelease(f.Until); err != nil {
				return nil, fmt.Errorf("version table: feature %s: until: %w", f.Name, err)
			}
		}
		for _, p := range f.Products {
			if t.productRule(p) == nil {
				return nil, fmt.Errorf("version table: feature %s: unknown product %q", f.Name, p)
			}
		}
	}
	return &t, nil
}

// LookupTorchNPU returns the row for an exact torch_npu version string. The
// match is exact on purpose: "2.9.0" (7.3.0) and "2.9.0.post2" (26.0.0) are
// different releases, and "2.8.0" belongs to 7.2.0, not 7.3.0.
func (t *VersionTable) LookupTorchNPU(torchNPU string) (Row, bool) {
	for _, r := range t.Rows {
		if r.TorchNPU == torchNPU {
			return r, true
		}
	}
	return Row{}, false
}

// MatchProduct returns the product rule whose pattern matches a device name
// as reported by torch.npu.get_device_name(0), e.g. "Ascend910B3".
func (t *VersionTable) MatchProduct(deviceName string) (ProductRule, bool) {
	for _, p := range t.Products {
		if p.re.MatchString(deviceName) {
			return p, true
		}
	}
	return ProductRule{}, false
}

func (t *VersionTable) productRule(product string) *ProductRule {
	for i := range t.Products {
		if t.Products[i].Product == product {
			return &t.Products[i]
		}
	}
	return nil
}

// Feature returns the named feature.
func (t *VersionTable) Feature(name string) (Feature, bool) {
	for _, f := range t.Features {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Available reports whether a feature exists in a TorchAir release on a
// product ("" skips the product check).
func (f Feature) Available(release, product string) bool {
	if c, err := CompareReleases(release, f.Since); err != nil || c < 0 {
		return false
	}
	if f.Until != "" {
		if c, err := CompareReleases(release, f.Until); err != nil || c > 0 {
			return false
		}
	}
	if product != "" && len(f.Products) > 0 && !slices.Contains(f.Products, product) {
		return false
	}
	return true
}

// FeaturesFor lists, in table order, the features available in a release on
// a product.
func (t *VersionTable) FeaturesFor(release, product string) []string {
	out := []string{}
	for _, f := range t.Features {
		if f.Available(release, product) {
			out = append(out, f.Name)
		}
	}
	return out
}
