package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// badCheckExercise writes the exercise "bd" with what a check must
// report: its answer was edited since its references were recorded
// (stale), q2 prints a constant (the untouched starter passes it), and
// its fixture expects q1 to pass (it mismatches) and a verdict for q9,
// which is no graded cell. It returns --exercises and --answers.
func badCheckExercise(t *testing.T) []string {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "ex"), filepath.Join(root, "ans")
	for _, d := range []string{filepath.Join(exDir, "bd"), filepath.Join(ansDir, "bd", "fixtures"), filepath.Join(ansDir, "bd", "references")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nb := func(solution string) string {
		src, _ := json.Marshal("### BEGIN SOLUTION\n" + solution + "\n### END SOLUTION")
		return `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}}, "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": ` + string(src) + `, "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q2", "metadata": {"grader": {"id": "q2", "points": 1}}, "source": "print(2)", "outputs": [], "execution_count": null}]}`
	}
	writeFile(t, filepath.Join(exDir, "bd", "exercise.json"), `{"id": "bd", "title": "bd", "starter": "s.ipynb", "answer": "a.ipynb"}`)
	writeFile(t, filepath.Join(ansDir, "bd", "a.ipynb"), nb("x = 3"))
	out := func(s string) string { return `[{"output_type": "stream", "name": "stdout", "text": "` + s + `"}]` }
	writeFile(t, filepath.Join(ansDir, "bd", "references", "cpu.json"),
		`{"exercise": "bd", "profile": "cpu", "answer_sha256": "0000", "cells": {"q1": `+out(`1\n`)+`, "q2": `+out(`2\n`)+`}}`)
	writeFile(t, filepath.Join(ansDir, "bd", "fixtures", "wrong.ipynb"), nb("x = 5"))
	writeFile(t, filepath.Join(ansDir, "bd", "fixtures", "wrong.expected.json"), `{"cells": {"q1": "pass", "q9": "pass"}}`)
	return []string{"--exercises", exDir, "--answers", ansDir}
}

// TestCheckReportSpeaksChinese: under LANG=zh_CN.UTF-8 the report of a
// check (its progress lines, table, findings and the advice about stale
// reference outputs) has no English sentence left, nor does its refusal
// of an environment the exercises were not written for; under
// LANG=en_US.UTF-8 they read as they always did. The report's sentences
// used to be English whatever the locale.
func TestCheckReportSpeaksChinese(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	if err := (&execution.Executor{}).Check(context.Background()); err != nil {
		t.Skip(err)
	}
	t.Parallel()
	args := append([]string{"check", "--env", "host", "--sandbox", "none", "--warm=false"}, badCheckExercise(t)...)
	// One check per language: each executes three notebooks.
	checkAll(t, localeEN, args, exitMismatch,
		"the untouched starter passes this cell; the question gives its points away",
		"bd wrong.ipynb q1: got mismatch, want pass: ",
		"the fixture expects a verdict for q9, which is not a graded cell of bd",
		"were recorded from another version of the answer (they are stale)",
		"graded against the fresh outputs, fixture wrong.ipynb now disagrees with its expectations:",
		"recording them (--update-reference) is not advised",
		"EXERCISE  NOTEBOOK", "3 notebooks checked on profile cpu in ")
	checkAll(t, localeZH, args, exitMismatch,
		"未改动的初始笔记本就能通过这个单元格", "bd wrong.ipynb q1: 得到「输出不符」，应为「通过」",
		"测试用例期望 q9 的结果，但它不是 bd 的评分单元格", "是用另一版参考答案记录的（已过期）",
		"按新输出评分，测试用例 wrong.ipynb 与预期不符", "不建议记录（--update-reference）",
		"单元格数", "检查了 3 个笔记本（配置 cpu）")
	refuse := cliCase{args: []string{"check", "--env", "host", "--only", "ch1", "--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")},
		code: exitError, en: "refusing to check in the host's Python", zh: "拒绝在主机自带的 Python"}
	checkCase(t, localeEN, refuse)
	checkCase(t, localeZH, refuse)
}

// checkAll is checkCase with every one of wants in the output of one run.
func checkAll(t *testing.T, locale string, args []string, code int, wants ...string) {
	t.Helper()
	c := cliCase{args: args, code: code, en: wants[0], zh: wants[0]}
	got, stdout, stderr := runCLIEnv(t, locale, c.args...)
	all := stdout + stderr
	name := locale + " npugrade " + strings.Join(args, " ")
	if got != code {
		t.Errorf("%s: exit %d, want %d:\n%s", name, got, code, all)
	}
	if locale == localeZH {
		if w := cliEnglish.FindString(withoutCLICode(all)); w != "" {
			t.Errorf("%s: English %q in the Chinese output:\n%s", name, w, all)
		}
	}
	for _, want := range wants {
		if !strings.Contains(all, want) {
			t.Errorf("%s: output lacks %q:\n%s", name, want, all)
		}
	}
}

// TestCheckRepoExercisesSpeakChinese: the report of a passing check of a
// chapter of the repository, in its grading environment, is Chinese
// under LANG=zh_CN.UTF-8 (the English one is what the tutorial CI and
// the other tests read).
func TestCheckRepoExercisesSpeakChinese(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	envDir := envtest.RequireCPU(t)
	t.Parallel()
	// Longer than runCLIEnv allows: the chapter's answer, starter and ten
	// fixtures execute in the grading environment.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(withLang(ctx, langZH), []string{"check", "--only", "ch1", "--jobs", "2", "--env", filepath.Base(envDir), "--envs-dir", filepath.Dir(envDir),
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")}, &out, &errb)
	all := out.String() + errb.String()
	if code != exitOK || !strings.Contains(all, "符合预期") || !strings.Contains(all, "单元格数") {
		t.Fatalf("zh-CN check --only ch1: exit %d, want 0 and a Chinese report:\n%s", code, all)
	}
	if w := cliEnglish.FindString(withoutCLICode(out.String())); w != "" {
		t.Errorf("English %q in the Chinese report:\n%s", w, out.String())
	}
}

// TestImportNotesSpeakChinese: what `exercise import` says each cell
// became (nbgrader, nbval with papermill, Otter) is Chinese under
// LANG=zh_CN.UTF-8 and as it was under LANG=en_US.UTF-8.
func TestImportNotesSpeakChinese(t *testing.T) {
	t.Parallel()
	td := filepath.Join(repoRoot, "internal", "importer", "testdata")
	out := filepath.Join(t.TempDir(), "out.ipynb")
	imp := func(nb string) []string { return []string{"exercise", "import", filepath.Join(td, nb), "-o", out} }
	for _, c := range []cliCase{
		{args: imp("nbgrader/source.ipynb"), en: "nbgrader autograder tests -> graded cell, passes when it raises nothing", zh: "nbgrader 自动评分测试 -> 评分单元格，不抛出异常即通过"},
		{args: imp("nbgrader/source.ipynb"), en: "nbgrader autograded answer -> solution cell", zh: "nbgrader 自动评分的答案 -> 作答单元格"},
		{args: imp("nbval_papermill.ipynb"), en: "parameters: papermill parameters cell -> locked", zh: "papermill 参数单元格 -> 锁定"},
		{args: imp("otter/demo.ipynb"), en: "Otter tests -> ", zh: "Otter 测试 -> "},
	} {
		checkCase(t, localeEN, c)
		checkCase(t, localeZH, c)
	}
}

// TestServeStartupSpeaksChinese: the errors and warnings serve prints as
// it starts (a bad flag value, a bad database URL, a sandbox limit its
// local runner cannot take, an address in use) are Chinese under
// LANG=zh_CN.UTF-8, with no English sentence left, and English under
// LANG=en_US.UTF-8; on both databases.
func TestServeStartupSpeaksChinese(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	ex := []string{"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers"), "--log-level", "error"}
	serve := func(args ...string) []string { return append(append([]string{"serve"}, args...), ex...) }
	for _, c := range []cliCase{
		{args: serve("--db", "mysql://x/y"), code: exitError, en: `database URL "mysql://x/y": want`, zh: `数据库 URL "mysql://x/y" 无效`},
		{args: serve("--upload-limit", "lots"), code: exitError, en: `--upload-limit: "lots": want COUNT/DURATION`, zh: `--upload-limit："lots"：应为 COUNT/DURATION`},
		{args: serve("--gc-percent", "x"), code: exitError, en: `--gc-percent: "x" is not a percentage`, zh: `"x" 不是不小于 1 的百分数`},
		{args: serve("--gc-memory-limit", "-3"), code: exitError, en: `--gc-memory-limit: "-3" is not a positive size`, zh: `"-3" 不是正的字节数`},
		{args: serve("--public-url", "ftp://x"), code: exitError, en: "--public-url: want http(s)://host[:port][/path]", zh: "--public-url：应为"},
		{args: serve("--trusted-proxies", "nope"), code: exitError, en: `--trusted-proxies: not a CIDR or an address: "nope"`, zh: `不是 CIDR 或地址："nope"`},
		{args: serve("--oidc-issuer", "https://id.example.edu"), code: exitError, en: "--oidc-issuer needs --oidc-client-id", zh: "需要同时给出 --oidc-client-id"},
		{args: serve("--jupyterhub-url", "hub"), code: exitError, en: `--jupyterhub-url "hub": want http(s)://HOST[:PORT]`, zh: `--jupyterhub-url "hub"：应为`},
	} {
		checkCase(t, localeEN, c)
		checkCase(t, localeZH, c)
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.URL(t, d)
			for _, c := range []cliCase{
				{args: serve("--db", db, "--addr", "127.0.0.1:0", "--env", "host", "--memory-limit", "lots"), code: exitError,
					en: `the local runner cannot execute notebooks: --memory-limit: parse size "lots"`, zh: `进程内评分机无法执行笔记本：--memory-limit：无法解析大小 "lots"`},
				{args: serve("--db", db, "--addr", "127.0.0.1:0", "--local-runner", "1", "--env", "host", "--sandbox", "none", "--interrupt-grace", "-1s"), code: exitError,
					en: "--interrupt-grace -1s: must be positive", zh: "--interrupt-grace -1s：必须大于 0"},
				{args: serve("--db", db, "--addr", "127.0.0.1:0", "--env", "Bad!"), code: exitError, en: `environment name "Bad!": want lower-case letters`, zh: `环境名 "Bad!" 无效`},
				{args: serve("--db", db, "--addr", busy.Addr().String()), code: exitError, en: "cannot listen on " + busy.Addr().String() + ": ", zh: "无法监听 " + busy.Addr().String()},
			} {
				checkCase(t, localeEN, c)
				checkCase(t, localeZH, c)
			}
		})
	}
}

// TestRunnerStartupSpeaksChinese: `npugrade runner` sends its language
// as Accept-Language on every request, shows the problem the server
// refused its registration with as the server worded it, and says in
// its language what it could not start with (a missing token, a bad
// sandbox limit, an unreachable server). It used to send none, so the
// server's problems were English.
func TestRunnerStartupSpeaksChinese(t *testing.T) {
	if err := (&execution.Executor{}).Check(context.Background()); err != nil {
		t.Skip(err) // the registration cases need the host's jupyter
	}
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lang := r.Header.Get("Accept-Language")
		mu.Lock()
		asked = append(asked, r.URL.Path+" "+lang)
		mu.Unlock()
		detail := "invalid or revoked token"
		if lang == langZH {
			detail = "令牌无效或已吊销"
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"title": detail, "detail": detail, "status": 401})
	}))
	defer ts.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := closed.Addr().String()
	closed.Close()
	runner := func(server string, args ...string) []string {
		return append([]string{"runner", "--server", server, "--token", "x", "--env", "host", "--sandbox", "none", "--warm=false", "--python", "/usr/bin/python3"}, args...)
	}
	for _, c := range []cliCase{
		{args: []string{"runner", "--server", ts.URL}, code: exitError, en: "--token (or NPUGRADE_RUNNER_TOKEN) are required unless --probe", zh: "需要"},
		{args: runner(ts.URL, "--labels", "gpu"), code: exitError, en: `--labels: "gpu" is not key=value`, zh: `--labels`},
		{args: runner(ts.URL, "--memory-limit", "0"), code: exitError, en: `--memory-limit: parse size "0": must be positive`, zh: `--memory-limit：无法解析大小 "0"：必须大于 0`},
		{args: runner(ts.URL), code: exitError, en: "the server refused to register this runner: 401 Unauthorized: invalid or revoked token",
			zh: "服务器拒绝登记这台评分机：401 未登录或令牌无效：令牌无效或已吊销"},
		{args: runner("http://" + unreachable), code: exitError, en: "cannot reach the server " + unreachable + ": connection refused", zh: "无法连接服务器 " + unreachable + "：连接被拒绝"},
	} {
		checkCase(t, localeEN, c)
		checkCase(t, localeZH, c)
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(asked, ","), "/api/runner/v1/register en,/api/runner/v1/register zh-CN"; got != want {
		t.Errorf("the server was asked %q, want %q", got, want)
	}
}
