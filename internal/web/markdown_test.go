package web

import (
	"strings"
	"testing"
)

// TestRenderMarkdownSafely: Markdown cells render as HTML (emphasis, code,
// tables, links) and nothing active survives: scripts, handlers,
// javascript: links, iframes, styles, images.
func TestRenderMarkdownSafely(t *testing.T) {
	t.Parallel()
	src := "# Title\n\n**bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[ok](https://example.org/x) " +
		"[bad](javascript:alert(1))\n\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n" +
		"<iframe src=https://evil.example></iframe><style>body{display:none}</style><a href=\"#\" onclick=\"alert(3)\">c</a>\n"
	got := string(renderMarkdown(src))
	for _, want := range []string{"<h1", "<strong>bold</strong>", "<code>code</code>", "<table>", `href="https://example.org/x"`, `rel="nofollow`} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered Markdown lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"<script", "onerror", "javascript:", "<iframe", "<style", "onclick", "<img"} {
		if strings.Contains(strings.ToLower(got), bad) {
			t.Errorf("rendered Markdown keeps %q:\n%s", bad, got)
		}
	}
}
