package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6} +(.+?)\s*$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// anchors are the heading anchors of a Markdown file, as GitHub makes
// them (lower case, punctuation dropped, spaces to '-'), code blocks aside.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, ln := range strings.Split(text, "\n") {
		if strings.HasPrefix(ln, "```") {
			fence = !fence
		}
		if m := mdHeading.FindStringSubmatch(ln); m != nil && !fence {
			s := strings.ToLower(slugDrop.ReplaceAllString(m[1], ""))
			out[strings.ReplaceAll(s, " ", "-")] = true
		}
	}
	return out
}

// TestDocLinksResolve: every relative link of the README and docs/ names
// a file that exists, and every #anchor a heading of its file.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	if len(files) < 5 {
		t.Fatalf("only %d Markdown files: the walk is broken", len(files))
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				if st, serr := os.Stat(dest); serr == nil && st.IsDir() && frag == "" {
					continue
				}
				t.Errorf("%s: link %s: no such file", rel, target)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(string(db))[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", rel, target)
			}
		}
	}
	if links < 20 {
		t.Fatalf("only %d links checked: the walk is broken", links)
	}
}
