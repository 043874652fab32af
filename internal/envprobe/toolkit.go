package envprobe

import (
	"bufio"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ToolkitInfo is the content of a CANN ascend_toolkit_install.info file.
type ToolkitInfo struct {
	PackageName        string   `json:"package_name"` // "Ascend-cann-toolkit"
	Version            string   `json:"version"`      // "8.5.0", "8.3.RC1"
	InnerVersion       string   `json:"innerversion"` // "V100R001C25SPC001B232"
	CompatibleVersions []string `json:"compatible_version,omitempty"`
	Arch               string   `json:"arch"` // "aarch64", "x86_64"
	OS                 string   `json:"os,omitempty"`
	Path               string   `json:"path"`
}

// Layout names the install layout the path belongs to: "cann" for the
// 8.5.0-and-later `/usr/local/Ascend/cann-<version>` directory, "ascend-toolkit"
// for the classic `.../ascend-toolkit/<version>/<arch>-linux`, "" otherwise.
func (t ToolkitInfo) Layout() string {
	switch {
	case strings.HasPrefix(path.Base(t.Path), "cann-"):
		return "cann"
	case strings.Contains(t.Path, "/ascend-toolkit/"):
		return "ascend-toolkit"
	}
	return ""
}

// ParseToolkitInstallInfo parses key=value lines. Keys are matched without
// regard to case and values may be quoted, so hand-edited or older files parse
// too; unknown keys are ignored. The version is required.
func ParseToolkitInstallInfo(text string) (ToolkitInfo, error) {
	var t ToolkitInfo
	err := eachKeyValue(text, func(key, value string) {
		switch strings.ToLower(key) {
		case "package_name":
			t.PackageName = value
		case "version":
			t.Version = value
		case "innerversion":
			t.InnerVersion = value
		case "compatible_version":
			for _, v := range strings.Split(value, ",") {
				if v = strings.Trim(strings.TrimSpace(v), "[]"); v != "" {
					t.CompatibleVersions = append(t.CompatibleVersions, v)
				}
			}
		case "arch":
			t.Arch = value
		case "os":
			t.OS = value
		case "path":
			t.Path = value
		}
	})
	if err != nil {
		return ToolkitInfo{}, fmt.Errorf("parse ascend_toolkit_install.info: %w", err)
	}
	if t.Version == "" {
		return ToolkitInfo{}, errors.New("parse ascend_toolkit_install.info: no version= line")
	}
	return t, nil
}

// SoCInfo holds the core counts of the [SoCInfo] section of a CANN
// platform_config/<soc>.ini. They bound the core-limit options (valid range
// [1, count]).
type SoCInfo struct {
	AICoreCount     int   `json:"ai_core_cnt"`
	CubeCoreCount   int   `json:"cube_core_cnt"`
	VectorCoreCount int   `json:"vector_core_cnt"`
	MemorySize      int64 `json:"memory_size,omitempty"`
	L2Size          int64 `json:"l2_size,omitempty"`
}

// ParseSoCInfo reads the [SoCInfo] section of a platform_config ini (a whole
// file or just that section). ai_core_cnt is required; the other counts are
// read when present.
func ParseSoCInfo(text string) (SoCInfo, error) {
	var (
		s          SoCInfo
		inSection  bool
		sawSection bool
		sawAICore  bool
		firstErr   error
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			inSection = strings.EqualFold(strings.Trim(line, "[] "), "SoCInfo")
			sawSection = sawSection || inSection
			continue
		}
		if !inSection {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		parseInt := func(dst *int64) {
			if value == "" {
				return
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", key, err)
			}
			*dst = n
		}
		var n int64
		switch key {
		case "ai_core_cnt":
			parseInt(&n)
			s.AICoreCount, sawAICore = int(n), true
		case "cube_core_cnt":
			parseInt(&n)
			s.CubeCoreCount = int(n)
		case "vector_core_cnt":
			parseInt(&n)
			s.VectorCoreCount = int(n)
		case "memory_size":
			parseInt(&s.MemorySize)
		case "l2_size":
			parseInt(&s.L2Size)
		}
	}
	switch {
	case sc.Err() != nil:
		return SoCInfo{}, fmt.Errorf("parse SoCInfo: %w", sc.Err())
	case firstErr != nil:
		return SoCInfo{}, fmt.Errorf("parse SoCInfo: %w", firstErr)
	case !sawSection:
		return SoCInfo{}, errors.New("parse SoCInfo: no [SoCInfo] section")
	case !sawAICore:
		return SoCInfo{}, errors.New("parse SoCInfo: no ai_core_cnt in [SoCInfo]")
	}
	return s, nil
}

// eachKeyValue calls fn for every key=value line, with surrounding quotes
// removed from the value.
func eachKeyValue(text string, fn func(key, value string)) error {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		fn(strings.TrimSpace(key), value)
	}
	return sc.Err()
}
