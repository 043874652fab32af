package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/domain"
)

// TestCLIServerWithoutScheme: `submit --server 127.0.0.1:8080` used to
// panic with a stack trace. Every command that takes --server refuses a
// value that is not an http(s) URL with a usage error naming the URL it
// probably meant.
func TestCLIServerWithoutScheme(t *testing.T) {
	t.Parallel()
	nb := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
	for _, c := range []struct{ server, mention string }{
		{"127.0.0.1:8080", "e.g. --server http://127.0.0.1:8080"},
		{"localhost:8080", "e.g. --server http://localhost:8080"},
		{"grader.campus.edu", "e.g. --server http://grader.campus.edu"},
		{"ftp://grader.campus.edu", "must be an http:// or https:// URL"},
		{"http://", "must be an http:// or https:// URL"},
	} {
		wantUsageError(t, c.mention, "submit", "--server", c.server, "--token", "x", "--exercise", "ch1", nb)
		wantUsageError(t, c.mention, "runner", "--server", c.server, "--token", "x")
	}
}

// TestCLISubmitCutsMessagesOnCharacters: each verdict's message is cut
// to 100 terminal columns between characters; a Chinese message used to
// be cut at byte 100, inside a character (只� on every quiz row). The
// server here is a stand-in answering the documented JSON at once (a
// real one would have to execute the notebook).
func TestCLISubmitCutsMessagesOnCharacters(t *testing.T) {
	t.Parallel()
	zh := strings.Repeat("只需把图模式的编译结果与参考输出比较。", 8) // 19 wide characters each
	ascii := strings.Repeat("expected tensor shape ", 10)
	cells := []cellView{
		{CellResult: domain.CellResult{CellID: "q1", Verdict: "wrong", Message: zh, MaxPoints: 1, Counted: true}},
		{CellResult: domain.CellResult{CellID: "q2", Verdict: "wrong", Message: ascii, MaxPoints: 1, Counted: true}},
		{CellResult: domain.CellResult{CellID: "q3", Verdict: "wrong", Message: "第" + strings.Repeat("a", 97) + "只", MaxPoints: 1, Counted: true}},
		{CellResult: domain.CellResult{CellID: "q4", Verdict: "pass", Message: "正确", Points: 1, MaxPoints: 1, Counted: true}},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/submissions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(submissionView{ID: "s1", Exercise: "ch1", Status: domain.StatusGraded, Score: 1, MaxScore: 4, Message: "graded", Cells: cells})
	}))
	defer ts.Close()
	nb := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
	code, stdout, stderr := runCLI(t, "submit", "--lang", "en", "--server", ts.URL, "--token", "x", "--exercise", "ch1", nb)
	if code != exitMismatch {
		t.Fatalf("submit: exit %d, want %d; stderr %s", code, exitMismatch, stderr)
	}
	if !utf8.ValidString(stdout) || strings.ContainsRune(stdout, utf8.RuneError) {
		t.Errorf("submit printed a cut character:\n%s", stdout)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && strings.HasPrefix(f[0], "q") {
			rows[f[0]] = strings.Join(f[3:], " ")
		}
	}
	// q1: 49 wide characters (98 columns) and the ellipsis.
	if got := rows["q1"]; !strings.HasSuffix(got, "…") || displayColumns(got) > 100 || !strings.HasPrefix(zh, strings.TrimSuffix(got, "…")) ||
		utf8.RuneCountInString(got) != 50 {
		t.Errorf("Chinese message: %q (%d columns), want its first 49 characters and …", got, displayColumns(got))
	}
	if got := rows["q2"]; !strings.HasSuffix(got, "…") || displayColumns(got) != 100 {
		t.Errorf("ASCII message: %q (%d columns), want 99 and …", got, displayColumns(got))
	}
	// q3 takes 2 + 97 + 2 = 101 columns: its last, wide character goes.
	if got := rows["q3"]; got != "第"+strings.Repeat("a", 97)+"…" {
		t.Errorf("mixed message: %q, want the wide last character cut", got)
	}
	if got := rows["q4"]; got != "正确" {
		t.Errorf("short message: %q", got)
	}
}

// TestOneLineWidths: 100 columns fit as they are; wide characters count
// two, combining marks none.
// TestCLISubmitSpeaksChinese: with a Chinese locale (--lang zh-CN, the
// default under LANG=zh_CN.UTF-8) submit asks the server for Chinese
// messages and says its own lines, statuses, verdicts and the question
// names (第 13 题 · 隐藏测试) in Chinese. The server is a stand-in that
// answers the documented JSON and records the request's language.
func TestCLISubmitSpeaksChinese(t *testing.T) {
	t.Parallel()
	var asked string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.Header.Get("Accept-Language")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(submissionView{ID: "s1", Exercise: "ch1", Status: domain.StatusGraded, Score: 1, MaxScore: 2, Message: "graded", Cells: []cellView{
			{CellResult: domain.CellResult{CellID: "q13", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true}, Question: 13},
			{CellResult: domain.CellResult{CellID: "q13-probe", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "隐藏测试输出不符"}, Question: 13, HiddenTest: true},
		}})
	}))
	defer ts.Close()
	nb := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
	code, stdout, stderr := runCLI(t, "submit", "--lang", "zh-CN", "--server", ts.URL, "--token", "x", "--exercise", "ch1", nb)
	if code != exitMismatch {
		t.Fatalf("submit: exit %d; stderr %s", code, stderr)
	}
	if asked != "zh-CN" {
		t.Errorf("Accept-Language %q, want zh-CN", asked)
	}
	for _, want := range []string{"已提交 ", "已评分", "题目", "第 13 题 · 隐藏测试", "输出不符", "通过", "得分：1 / 2（已评分）"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("submit's output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "q13-probe") || strings.Contains(stdout, "score:") {
		t.Errorf("submit's Chinese output has English labels:\n%s", stdout)
	}
	wantUsageError(t, `--lang: "fr" is not zh-CN or en`, "submit", "--lang", "fr", "--server", ts.URL, "--token", "x", "--exercise", "ch1", nb)
}

func TestLangFromEnv(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"LANG=zh_CN.UTF-8": langZH, "LANG=en_US.UTF-8": langEN, "": langEN, "LC_ALL=zh_TW.UTF-8,LANG=en_US": langZH,
		"LC_ALL=C.UTF-8,LANG=zh_CN.UTF-8": langEN, "LC_MESSAGES=zh_CN,LANG=en_US": langZH,
	} {
		vars := map[string]string{}
		for _, kv := range strings.Split(env, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		if got := langFromEnv(func(k string) string { return vars[k] }); got != want {
			t.Errorf("%s: %s, want %s", env, got, want)
		}
	}
}

func TestOneLineWidths(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		strings.Repeat("只", 50):          strings.Repeat("只", 50),
		strings.Repeat("只", 51):          strings.Repeat("只", 49) + "…",
		strings.Repeat("e\u0301", 100):   strings.Repeat("e\u0301", 100),
		"line one\nline two":             "line one line two",
		strings.Repeat("ｘ", 60):          strings.Repeat("ｘ", 49) + "…", // fullwidth
		strings.Repeat("a", 99) + "只":    strings.Repeat("a", 99) + "…",
		strings.Repeat("a", 98) + "只":    strings.Repeat("a", 98) + "只",
		strings.Repeat("a", 99) + "\xff": strings.Repeat("a", 99) + "\xff",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
