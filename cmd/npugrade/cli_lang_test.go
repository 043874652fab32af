package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// cliEnglish are words of the command line's English that must not be
// left in its Chinese, once code, flags, paths, ids and quoted values
// (withoutCLICode) are removed.
var cliEnglish = regexp.MustCompile(`(?i)\b(the|an?|and|or|of|to|is|are|be|with|for|from|in|on|not|no|this|its?|by|as|at|each|every|when|else|than|default|usage|flags|environment|users?|tokens?|database|cohorts?|exercises?|learners?|instructors?|created|imported|updated|unchanged|missing|unknown|argument|required|server|submitted|score|runs?|prints?|file|directory|new|list|shown|only|wrote|skipped|course|members|platform|registered|values|command|subcommand|give|want|needs?|must|cannot|reach|refused|denied|expired|open|browser|signed|saved|write|read|import|shows?|here|there|up|date|differs|while|after|before)\b`)

// withoutCLICode removes what stays as it is in every language: code in
// backticks, quoted values, URLs, paths, flags, environment variables and
// placeholders (FILE, SLUG), choice lists, key=value pairs, npugrade's
// command names and the arguments given them.
func withoutCLICode(s string) string {
	for _, re := range []string{
		`\bnpugrade(\s+[a-z][\w-]*)*`, `\w+(, \w+)+`, `(?m)^\s+--\S+.*$`, `(?m)^  [a-z][\w-]*( [A-Za-z]+)?\s{2,}`, `（默认[^）]*）`, `\S+(,\S+)+`,
		"`[^`\n]*`", `"[^"\n]*"`, `“[^”\n]*”`, `「[^」\n]*」`, `'[^'\n]*'`, `<[^>\n]*>`,
		`[a-z][a-z0-9+.-]*://\S*`, `\S*/\S*`, `\S+\.(ipynb|csv|json|db|txt|xml|tar)\b`,
		`--?[a-zA-Z][\w-]*(=\S*)?`, `\b[A-Z][A-Z0-9_]+\b`, `\S+=\S*`, `\w+(\|\w+)+`,
		`\bnpugrade(\s+[a-z][\w-]*)*`, `\bnpg_\w+`,
	} {
		s = regexp.MustCompile(re).ReplaceAllString(s, " ")
	}
	return s
}

// runCLIEnv runs the command line in-process as main does under the
// locale variables env ("LANG=zh_CN.UTF-8"): its language comes from
// them.
func runCLIEnv(t *testing.T, env string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range strings.Fields(env) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(withLang(ctx, langFromEnv(func(k string) string { return vars[k] })), args, &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("npugrade %s ran until cancelled (exit %d)", strings.Join(args, " "), code)
	}
	return code, out.String(), errb.String()
}

const (
	localeZH = "LANG=zh_CN.UTF-8"
	localeEN = "LANG=en_US.UTF-8"
)

// cliCase is one command line, its exit status and what its output says
// in each language.
type cliCase struct {
	args     []string
	code     int
	en, zh   string
	noZHTest bool // its output is a table whose data stays as it is
}

// checkCase runs c under locale and checks its status and words: in
// Chinese no English word is left, nor a stack trace.
func checkCase(t *testing.T, locale string, c cliCase) {
	t.Helper()
	code, stdout, stderr := runCLIEnv(t, locale, c.args...)
	all := stdout + stderr
	name := locale + " npugrade " + strings.Join(c.args, " ")
	if code != c.code {
		t.Errorf("%s: exit %d, want %d:\n%s", name, code, c.code, all)
	}
	if strings.Contains(all, "panic") || strings.Contains(all, "goroutine ") {
		t.Errorf("%s: a stack trace:\n%s", name, all)
	}
	want := c.en
	if locale == localeZH {
		want = c.zh
		if w := cliEnglish.FindString(withoutCLICode(all)); w != "" && !c.noZHTest {
			t.Errorf("%s: English %q in the Chinese output:\n%s", name, w, all)
		}
	}
	if !strings.Contains(all, want) {
		t.Errorf("%s: output lacks %q:\n%s", name, want, all)
	}
}

// cliHelps are every command's and subcommand's help.
var cliHelps = [][]string{
	{"help"}, {"--help"}, {"serve", "--help"}, {"runner", "--help"}, {"check", "--help"}, {"submit", "--help"}, {"login", "--help"},
	{"migrate", "--help"}, {"user", "--help"}, {"user", "add", "--help"}, {"user", "list", "--help"}, {"user", "token", "--help"},
	{"user", "revoke", "--help"}, {"user", "import", "--help"},
	{"cohort", "--help"}, {"cohort", "create", "--help"}, {"cohort", "add", "--help"}, {"cohort", "list", "--help"}, {"cohort", "offer", "--help"},
	{"exercise", "--help"}, {"exercise", "starter", "--help"}, {"exercise", "import", "--help"},
	{"env", "--help"}, {"env", "build", "--help"}, {"env", "import", "--help"}, {"env", "list", "--help"}, {"env", "rm", "--help"},
	{"lti", "--help"}, {"lti", "platform", "add", "--help"}, {"lti", "platform", "set", "--help"}, {"lti", "platform", "list", "--help"},
	{"lti", "key", "rotate", "--help"}, {"lti", "sync-roster", "--help"},
}

// TestCLIHelpSpeaksChinese: under LANG=zh_CN.UTF-8 every command's help
// (its description, flags, defaults and environment variables) is in
// Chinese, with no English sentence left; under LANG=en_US.UTF-8 it is
// the English one. The whole command line used to be English.
func TestCLIHelpSpeaksChinese(t *testing.T) {
	t.Parallel()
	for _, args := range cliHelps {
		want := "usage: npugrade"
		if len(args) == 1 && args[0] != "help" && args[0] != "--help" {
			want = "usage: npugrade " + args[0]
		}
		checkCase(t, localeEN, cliCase{args: args, code: exitOK, en: want})
		checkCase(t, localeZH, cliCase{args: args, code: exitOK, zh: "用法：npugrade"})
	}
}

// TestCLIMistakesSpeakChinese: a mistaken command line (no command, an
// unknown one, an unknown flag, a bad value, a missing file) is refused
// in the reader's language, with the usage in it.
func TestCLIMistakesSpeakChinese(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dirs := []string{"--sandbox", "none", "--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")}
	for _, c := range []cliCase{
		{args: nil, code: exitError, en: "missing command", zh: "缺少命令"},
		{args: []string{"frob"}, code: exitError, en: `unknown command "frob"`, zh: "没有命令"},
		{args: []string{"serve", "--dbb", "x"}, code: exitError, en: "flag provided but not defined: -dbb", zh: "没有这个参数：-dbb"},
		{args: []string{"serve", "x"}, code: exitError, en: `unexpected argument "x"`, zh: "多余的参数"},
		{args: []string{"submit", "--wait", "0s", "x.ipynb"}, code: exitError, en: "must be at least 1s", zh: "不能小于 1s"},
		{args: []string{"user"}, code: exitError, en: "missing subcommand", zh: "缺少子命令"},
		{args: []string{"user", "frob"}, code: exitError, en: `unknown subcommand "frob"`, zh: "没有子命令"},
		{args: []string{"user", "add", "ada", "--role", "boss", "--db", "sqlite://x.db"}, code: exitError, en: "want one of learner", zh: "应为以下之一"},
		{args: []string{"user", "list", "--db", ""}, code: exitError, en: "no database: pass --db URL", zh: "没有数据库"},
		{args: []string{"user", "list", "--db", "sqlite://" + filepath.Join(dir, "none.db")}, code: exitError, en: "no database at", zh: "处没有数据库"},
		{args: []string{"cohort", "frob"}, code: exitError, en: `unknown subcommand "frob"`, zh: "没有子命令"},
		{args: []string{"cohort", "offer", "spring"}, code: exitError, en: "missing argument SLUG EXERCISE", zh: "缺少参数"},
		{args: []string{"exercise", "frob"}, code: exitError, en: `unknown subcommand "frob"`, zh: "没有子命令"},
		{args: []string{"exercise", "import", filepath.Join(dir, "none.ipynb")}, code: exitError, en: "no such file or directory", zh: "没有这个文件或目录"},
		{args: []string{"env", "frob"}, code: exitError, en: `unknown subcommand "frob"`, zh: "没有子命令"},
		{args: []string{"env", "build", "npu", "--dir", dir}, code: exitError, en: "only the cpu environment is built", zh: "只能构建 cpu 环境"},
		{args: []string{"env", "import", "x", "--dir", dir}, code: exitError, en: "give exactly one of --tar or --oci", zh: "只能给出"},
		{args: []string{"env", "list", "--dir", dir}, code: exitOK, en: "no grading environments in", zh: "没有评分环境"},
		{args: []string{"lti", "frob"}, code: exitError, en: `unknown subcommand "frob"`, zh: "没有子命令"},
		{args: []string{"lti", "platform", "set", "x", "--db", "sqlite://x.db"}, code: exitError, en: "want the number platform list shows", zh: "应为"},
		{args: append([]string{"check", "--seed", "x1"}, dirs...), code: exitError, en: `--seed: "x1" is not an integer`, zh: "不是整数"},
		{args: append([]string{"check", "--only", "nosuch"}, dirs...), code: exitError, en: `--only: unknown exercise "nosuch"`, zh: "没有练习"},
		{args: []string{"runner", "--server", "127.0.0.1:8080", "--token", "x"}, code: exitError, en: "e.g. --server http://127.0.0.1:8080", zh: "不是 URL"},
	} {
		checkCase(t, localeEN, c)
		checkCase(t, localeZH, c)
	}
}

// TestCLILangFlag: --lang, before the command or among its flags, wins
// over the locale, and a language it does not speak is refused.
func TestCLILangFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--lang", "zh-CN", "user"}, {"--lang=zh-CN", "user", "frob"}, {"user", "list", "--lang", "zh-CN", "--db", ""}} {
		if _, stdout, stderr := runCLIEnv(t, localeEN, args...); !strings.Contains(stdout+stderr, "子命令") && !strings.Contains(stdout+stderr, "没有数据库") {
			t.Errorf("LANG=en_US npugrade %s: not Chinese:\n%s%s", strings.Join(args, " "), stdout, stderr)
		}
	}
	if _, _, stderr := runCLIEnv(t, localeZH, "user", "list", "--lang=en", "--db", ""); !strings.Contains(stderr, "no database: pass --db URL") {
		t.Errorf("LANG=zh_CN npugrade user list --lang=en: not English:\n%s", stderr)
	}
	checkCase(t, localeEN, cliCase{args: []string{"--lang", "fr", "user"}, code: exitError, en: `--lang: "fr" is not zh-CN or en`})
	checkCase(t, localeZH, cliCase{args: []string{"user", "list", "--lang", "fr"}, code: exitError, zh: `--lang："fr" 不是 zh-CN 或 en`})
}

// TestCLIInstructorSpeaksChinese: the instructor's commands (users,
// rosters, cohorts, migrations, LTI) say what they did, and what they
// refused, in the locale's language, on both databases.
func TestCLIInstructorSpeaksChinese(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		for _, locale := range []string{localeEN, localeZH} {
			t.Run(d+"/"+locale, func(t *testing.T) {
				t.Parallel()
				db := storetest.URL(t, d)
				dir := t.TempDir()
				one, three := filepath.Join(dir, "one.csv"), filepath.Join(dir, "three.csv")
				writeFile(t, one, "Name,Student Number,Section,Role\nLin Wei,s1,A,learner\n")
				writeFile(t, three, "Name,Student Number,Section,Role\nZhang San,s2,A,learner\nLi Si,s3,A,learner\nWang Wu,s4,B,learner\n")
				bad := filepath.Join(dir, "bad.csv")
				writeFile(t, bad, "Name,Student Number,Role\nZhao Liu,s9,boss\nQian Qi,,learner\n")
				for _, c := range []cliCase{
					{args: []string{"user", "add", "ada", "--role", "instructor"}, en: `created instructor user "ada"`, zh: `已创建讲师用户 "ada"`},
					{args: []string{"user", "add", "ada"}, code: exitError, en: `user "ada" already exists`, zh: `用户 "ada" 已存在`},
					{args: []string{"user", "token", "nobody"}, code: exitError, en: `no user "nobody"`, zh: `没有用户 "nobody"`},
					{args: []string{"user", "token", "ada"}, en: `new API token for "ada"`, zh: `"ada" 的新 API 令牌`},
					{args: []string{"user", "revoke", "ada"}, en: `revoked every token of "ada"`, zh: `已吊销 "ada" 的全部令牌`},
					{args: []string{"user", "import", one}, en: "imported 1 user: 1 created, 0 updated, 0 unchanged", zh: "已导入 1 位用户：新建 1 位，更新 0 位，不变 0 位"},
					{args: []string{"user", "import", three}, en: "imported 3 users: 3 created, 0 updated, 0 unchanged", zh: "已导入 3 位用户：新建 3 位"},
					{args: []string{"user", "import", three}, en: "imported 3 users: 0 created, 0 updated, 3 unchanged", zh: "已导入 3 位用户：新建 0 位，更新 0 位，不变 3 位"},
					{args: []string{"user", "import", bad}, code: exitError, en: `line 2: role "boss": want learner, instructor or admin`,
						zh: `名单有 2 个问题，未导入任何内容`},
					{args: []string{"user", "import", bad}, code: exitError, en: `line 3: no email or student number`, zh: `第 3 行：没有邮箱或学号`},
					{args: []string{"cohort", "create", "spring", "--title", "Spring"}, en: `cohort spring (id`, zh: "班级 spring（编号"},
					{args: []string{"cohort", "add", "spring", "ada", "--role", "instructor"}, en: "ada is an instructor of spring", zh: "ada 是 spring 的讲师"},
					{args: []string{"cohort", "add", "spring", "s1"}, en: "s1 is a learner of spring", zh: "s1 是 spring 的学员"},
					{args: []string{"cohort", "add", "nosuch", "ada"}, code: exitError, en: `no cohort "nosuch"`, zh: `没有班级 "nosuch"`},
					{args: []string{"cohort", "offer", "spring", "ch1", "--deadline", "2027-04-01T18:00:00+08:00"}, en: "spring offers ch1, due 2027-04-01T10:00:00Z", zh: "spring 开放 ch1，截止时间 2027-04-01T10:00:00Z"},
					{args: []string{"cohort", "offer", "spring", "ch2"}, en: "spring offers ch2, the exercise's deadline", zh: "spring 开放 ch2，截止时间按练习的设置"},
					{args: []string{"cohort", "offer", "spring", "ch1", "--late-penalty", `[{"after": "1h", "multiplier": 3}]`}, code: exitError,
						en: "late penalty step 1: after must be >= 0 and multiplier in [0, 1]", zh: "迟交扣分第 1 步：迟交时长须不小于 0，系数须在 0 到 1 之间"},
					{args: []string{"cohort", "offer", "spring", "ch1", "--max-submissions", "x"}, code: exitError, en: `--max-submissions: "x" is not a count`, zh: "不是次数"},
					{args: []string{"cohort", "list"}, en: "spring\tSpring\t1 learners\t1 instructors", zh: "spring\tSpring\t1 名学员\t1 名讲师", noZHTest: true},
					{args: []string{"migrate"}, en: "the schema is up to date", zh: "表结构已是最新"},
					{args: []string{"lti", "key", "rotate"}, en: "new signing key", zh: "新的签名密钥"},
					{args: []string{"lti", "sync-roster"}, code: exitError, en: "no linked course", zh: "没有关联的课程"},
				} {
					c.args = append(c.args, "--db", db)
					checkCase(t, locale, c)
				}
			})
		}
	}
}

// TestCLIPlural: counted phrases follow each language's plural rules.
func TestCLIPlural(t *testing.T) {
	t.Parallel()
	en, zh := words{langEN}, words{langZH}
	for _, c := range []struct{ got, want string }{
		{en.N("n.users", 1), "1 user"}, {en.N("n.users", 3), "3 users"}, {en.N("n.users", 0), "0 users"},
		{zh.N("n.users", 1), "1 位用户"}, {zh.N("n.users", 3), "3 位用户"},
		{en.N("n.exercises", 1), "1 exercise"}, {en.N("n.exercises", 3), "3 exercises"}, {zh.N("n.exercises", 3), "3 个练习"},
		{en.N("n.migrations", 1), "applied 1 migration"}, {en.N("n.migrations", 3), "applied 3 migrations"},
		{en.N("n.nosuch", 1), "‹n.nosuch›"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// TestCLIWordsFormats: each Chinese message takes the arguments its
// English takes, of the same kinds (a translation that dropped or
// reordered a %s would print %!s(MISSING) or the wrong value), and
// keeps the English's line breaks at its end.
func TestCLIWordsFormats(t *testing.T) {
	t.Parallel()
	verb := regexp.MustCompile(`%(\[(\d+)\])?[-+# 0]*\d*(\.\d+)?([a-zA-Z%])`)
	args := func(s string) map[int]string {
		got, next := map[int]string{}, 1
		for _, m := range verb.FindAllStringSubmatch(s, -1) {
			if m[4] == "%" {
				continue
			}
			if m[2] != "" {
				fmt.Sscan(m[2], &next)
			}
			got[next] = m[4]
			next++
		}
		return got
	}
	for en, zh := range zhWords {
		a, b := args(en), args(zh)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: arguments %v, its Chinese %q takes %v", en, a, zh, b)
		}
		if strings.HasSuffix(en, "\n") != strings.HasSuffix(zh, "\n") || strings.HasPrefix(en, "\n") != strings.HasPrefix(zh, "\n") {
			t.Errorf("%q: line breaks differ in its Chinese %q", en, zh)
		}
		if strings.Count(en, "`") != strings.Count(zh, "`") {
			t.Errorf("%q: its Chinese %q does not name the same `VALUE`", en, zh)
		}
	}
}

// TestCLISubmitLoginSpeakChinese: submit and login send Accept-Language
// in the locale's language on every request, show the server's problem
// as it words it, and say in that language when the server cannot be
// reached; `--server 127.0.0.1:PORT` (no scheme, which used to panic) is
// refused in it too, with exit 2 and no stack trace. Not parallel: it
// sets the environment (no saved login, no token).
func TestCLISubmitLoginSpeakChinese(t *testing.T) {
	var mu sync.Mutex
	asked := map[string][]string{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lang := r.Header.Get("Accept-Language")
		mu.Lock()
		asked[r.URL.Path] = append(asked[r.URL.Path], lang)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/submissions":
			detail := "notebook: not a notebook"
			if lang == langZH {
				detail = "notebook：不是笔记本文件"
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(map[string]any{"title": detail, "detail": detail, "status": 422})
		case "/api/v1/device/code":
			_ = json.NewEncoder(w).Encode(deviceCodeReply{DeviceCode: "d", UserCode: "ABCD-EFGH", VerificationURI: "http://" + r.Host + "/device",
				VerificationURIComplete: "http://" + r.Host + "/device?code=ABCD-EFGH", ExpiresIn: 30, Interval: 1})
		case "/api/v1/device/token":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "access_denied"})
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	noScheme := fmt.Sprintf("127.0.0.1:%d", port)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NPUGRADE_TOKEN", "")
	t.Setenv("NPUGRADE_SERVER", "")
	nb := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
	submit := func(server string) []string {
		return []string{"submit", "--server", server, "--token", "x", "--exercise", "ch1", nb}
	}
	for _, c := range []cliCase{
		{args: submit(noScheme), code: exitError, en: "is not a URL: give its scheme, e.g. --server http://" + noScheme, zh: "不是 URL：请写明协议，例如 --server http://" + noScheme},
		{args: submit("http://" + noScheme), code: exitError, en: "cannot reach the server " + noScheme + ": ", zh: "无法连接服务器 " + noScheme},
		{args: submit(ts.URL), code: exitError, en: "422 Unprocessable Entity: notebook: not a notebook", zh: "422 无法处理的请求: notebook：不是笔记本文件"},
		{args: []string{"submit", "--server", ts.URL, "--exercise", "ch1", nb}, code: exitError, en: "--token (or NPUGRADE_TOKEN, or npugrade login) is required", zh: "需要 --token"},
		{args: []string{"login", "--server", noScheme}, code: exitError, en: "is not a URL", zh: "不是 URL"},
		{args: []string{"login", "--server", "http://" + noScheme}, code: exitError, en: "cannot reach the server", zh: "无法连接服务器"},
		{args: []string{"login", "--server", ts.URL}, code: exitError, en: "Open " + ts.URL + "/device in your browser and enter the code ABCD-EFGH", zh: "登录被拒绝"},
	} {
		checkCase(t, localeEN, c)
		checkCase(t, localeZH, c)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/api/v1/submissions", "/api/v1/device/code", "/api/v1/device/token"} {
		if got := strings.Join(asked[path], ","); got != "en,zh-CN" {
			t.Errorf("%s was asked in %q, want en then zh-CN", path, got)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
