package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"regexp"
	"strings"
	"syscall"

	cldr "golang.org/x/text/feature/plural"
	"golang.org/x/text/message/catalog"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/web"
)

// The command line speaks the reader's language: zh-CN when the locale
// says Chinese (or --lang zh-CN), else English. A message is looked up by
// its English text, so a missing translation shows the English rather
// than nothing; TestCLIWordsFormats keeps each translation's verbs in
// step with its English.
const (
	langZH = "zh-CN"
	langEN = "en"
)

// langHelp is the help of every command's --lang.
const langHelp = "language of the output and the server's messages: zh-CN or en (default: from LC_ALL, LC_MESSAGES or LANG)"

// langFromEnv reads the language from the locale variables, in POSIX
// precedence (LC_ALL, LC_MESSAGES, LANG).
func langFromEnv(getenv func(string) string) string {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(k); v != "" {
			if strings.HasPrefix(strings.ToLower(v), "zh") {
				return langZH
			}
			return langEN
		}
	}
	return langEN
}

type langKey struct{}

// withLang makes lang the language of the commands run with ctx.
func withLang(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, langKey{}, lang)
}

// langOf is ctx's language; English unless main (from the locale) or
// --lang chose another, so tests read English whatever their locale.
func langOf(ctx context.Context) string {
	if l, ok := ctx.Value(langKey{}).(string); ok && l != "" {
		return l
	}
	return langEN
}

// langArg finds --lang in a command line before "--" (the commands also
// declare it, so that it parses): the language must be known before the
// flags are parsed, for the parse's own errors. A value that is neither
// language is left for the command to refuse.
func langArg(args []string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "lang" {
			continue
		}
		if !hasV && i+1 < len(args) {
			v = args[i+1]
		}
		if v == langZH || v == langEN {
			return v, true
		}
	}
	return "", false
}

// words says the CLI's messages in one language.
type words struct{ lang string }

func wordsOf(ctx context.Context) words { return words{langOf(ctx)} }

// T is the message whose English is en, in w's language.
func (w words) T(en string) string {
	if w.lang == langZH {
		if zh, ok := zhWords[en]; ok {
			return zh
		}
	}
	return en
}

// F formats the message whose English format is format.
func (w words) F(format string, a ...any) string { return fmt.Sprintf(w.T(format), a...) }

// Errorf is fmt.Errorf with the format in w's language (%w wraps).
func (w words) Errorf(format string, a ...any) error { return fmt.Errorf(w.T(format), a...) }

// N is the counted phrase key for n.
func (w words) N(key string, n int) string {
	if _, ok := pluralWords[key]; !ok {
		return "‹" + key + "›"
	}
	return printers[w.lang].Sprintf(key, n)
}

// Verdict is a verdict as the pages name it (check.Words).
func (w words) Verdict(v string) string { return web.VerdictName(w.lang, v) }

// Feedback is a grader's message as the pages word it, or another
// part's reason as flagProblem words it (check.Words).
func (w words) Feedback(msg string) string {
	if w.lang != langZH || msg == "" {
		return msg
	}
	if zh := web.ChineseFeedback(msg); zh != msg {
		return zh
	}
	return w.flagProblem(errors.New(msg))
}

// Role is a role as the pages name it.
func (w words) Role(role string) string {
	if zh, ok := zhWords["role:"+role]; ok && w.lang == langZH {
		return zh
	}
	return role
}

// Counted phrases follow each language's plural rules (CLDR, through
// golang.org/x/text): "imported 1 user", "imported 3 users"; Chinese has
// one form.
var pluralWords = map[string][2]catalog.Message{ // key: {en, zh-CN}
	"n.users":      {cldr.Selectf(1, "%d", "=1", "%d user", "other", "%d users"), catalog.String("%d 位用户")},
	"n.members":    {cldr.Selectf(1, "%d", "=1", "%d member", "other", "%d members"), catalog.String("%d 名成员")},
	"n.new_users":  {cldr.Selectf(1, "%d", "=1", "%d new user", "other", "%d new users"), catalog.String("%d 位新用户")},
	"n.removed":    {cldr.Selectf(1, "%d", "=1", "%d removed", "other", "%d removed"), catalog.String("移出 %d 名")},
	"n.skipped":    {cldr.Selectf(1, "%d", "=1", "%d skipped", "other", "%d skipped"), catalog.String("跳过 %d 名")},
	"n.exercises":  {cldr.Selectf(1, "%d", "=1", "%d exercise", "other", "%d exercises"), catalog.String("%d 个练习")},
	"n.notes":      {cldr.Selectf(1, "%d", "=1", "%d note", "other", "%d notes"), catalog.String("%d 条说明")},
	"n.migrations": {cldr.Selectf(1, "%d", "=1", "applied %d migration", "other", "applied %d migrations"), catalog.String("已应用 %d 个迁移")},
}

var printers = web.Printers(pluralWords)

// flagProblem words an error of the flag package (and of the flag
// values' Set) in w's language.
func (w words) flagProblem(err error) string {
	s := err.Error()
	if w.lang != langZH {
		return s
	}
	if zh, ok := zhWords[s]; ok {
		return zh
	}
	for _, t := range flagErrors {
		if m := t.re.FindStringSubmatch(s); m != nil {
			args := make([]any, 0, len(m)-1)
			for _, g := range m[1:] {
				args = append(args, w.flagProblem(errors.New(g)))
			}
			return fmt.Sprintf(t.zh, args...)
		}
	}
	return w.T(s)
}

var flagErrors = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^flag provided but not defined: (-\S+)$`), "没有这个参数：%s"},
	{regexp.MustCompile(`^flag needs an argument: (-\S+)$`), "参数 %s 需要一个值"},
	{regexp.MustCompile(`^bad flag syntax: (.*)$`), "参数写法不对：%s"},
	{regexp.MustCompile(`^invalid boolean value (".*") for (-\S+): (.*)$`), "布尔值 %s 对 %s 无效：%s"},
	{regexp.MustCompile(`^invalid value (".*") for flag (-\S+): (.*)$`), "值 %s 对参数 %s 无效：%s"},
	{regexp.MustCompile(`^must be at least (.*)$`), "不能小于 %s"},
	{regexp.MustCompile(`^want one of (.*)$`), "应为以下之一：%s"},
	{regexp.MustCompile(`^parse error$`), "无法解析"},
}

// submitWords are submit's own lines, {en, zh-CN}.
var submitWords = map[string][2]string{
	"submitted": {"submitted %s as %s\n", "已提交 %s，编号 %s\n"},
	"replayed":  {"%s was already submitted for %s as %s (same content); showing that submission\n", "%s 已用相同内容提交过 %s（编号 %s），显示那次提交\n"},
	"still":     {"still %s after %s; check later with GET /api/v1/submissions/%s\n", "等待 %[2]s 后仍为「%[1]s」；请稍后用 GET /api/v1/submissions/%[3]s 查看\n"},
	"header":    {"QUESTION\tVERDICT\tPOINTS\tMESSAGE", "题目\t结果\t得分\t说明"},
	"question":  {"Question %d", "第 %d 题"},
	"hidden":    {" · hidden test", " · 隐藏测试"},
	"score":     {"\nscore: %g / %g  (%s)\n", "\n得分：%g / %g（%s）\n"},
}

// cliWords returns the phrase lookup for lang: submit's own lines, and
// statuses (st.X) and verdicts (v.X) as the pages name them.
func cliWords(lang string) func(string) string {
	i := 0
	if lang == langZH {
		i = 1
	}
	return func(key string) string {
		if st, ok := strings.CutPrefix(key, "st."); ok {
			return web.StatusName(lang, st)
		}
		if v, ok := strings.CutPrefix(key, "v."); ok {
			return web.VerdictName(lang, v)
		}
		if w, ok := submitWords[key]; ok {
			return w[i]
		}
		return key
	}
}

// sysErrors are the system's words for the usual reasons a file or a
// server cannot be reached.
var sysErrors = map[error]string{
	fs.ErrNotExist:           "no such file or directory",
	fs.ErrPermission:         "permission denied",
	fs.ErrExist:              "file already exists",
	syscall.ECONNREFUSED:     "connection refused",
	syscall.EHOSTUNREACH:     "no route to host",
	syscall.EADDRINUSE:       "address already in use",
	syscall.EADDRNOTAVAIL:    "cannot assign requested address",
	context.DeadlineExceeded: "timed out",
}

// sysProblem is err's reason in w's language: the file or address it
// concerns and the system's reason, or err as it is.
func sysProblem(w words, err error) string {
	for target, reason := range sysErrors {
		if !errors.Is(err, target) {
			continue
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Path + ": " + w.T(reason)
		}
		var dns *net.OpError
		if errors.As(err, &dns) && dns.Addr != nil {
			return dns.Addr.String() + ": " + w.T(reason)
		}
		return w.T(reason)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.Name + ": " + w.T("no such host")
	}
	var addrErr *net.AddrError
	if errors.As(err, &addrErr) {
		return addrErr.Addr + ": " + w.T(addrErr.Err)
	}
	return err.Error()
}

// Problem is one of a service's listed problems (domain.ErrorProblems)
// in w's language, as the pages word it.
func (w words) Problem(p string) string {
	if w.lang != langZH {
		return p
	}
	return web.ChineseProblem(p)
}

// dbProblem is an error of the store or of a service, in w's language: a
// user's error (domain.Error) says its message, the store's usual ones are
// worded in Chinese too, and an internal one keeps its details (an
// operator needs them) after the system's reason.
func dbProblem(w words, err error) string {
	msg := err.Error()
	if domain.ErrorCode(err) != domain.EINTERNAL {
		msg = domain.ErrorMessage(err)
	}
	if w.lang != langZH {
		return msg
	}
	for _, t := range knownProblems {
		if m := t.re.FindStringSubmatch(msg); m != nil {
			args := make([]any, 0, len(m)-1)
			for _, g := range m[1:] {
				args = append(args, g)
			}
			return fmt.Sprintf(t.zh, args...)
		}
	}
	if zh := web.ChineseProblem(msg); zh != msg {
		return zh
	}
	return sysProblem(w, err)
}

// knownProblems are the store's and the services' messages a command
// line shows most, in Chinese (the rest stay as they are).
var knownProblems = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^no database at (\S+): `), "%s 处没有数据库"},
	{regexp.MustCompile(`^the (\S+) database has no npugrade schema`), "这个 %s 数据库没有 npugrade 的表结构（请先对它运行 npugrade migrate 或 serve）"},
	{regexp.MustCompile(`^database URL (".*") has no file path$`), "数据库 URL %s 没有文件路径"},
	{regexp.MustCompile(`^database URL (".*"): want `), "数据库 URL %s 无效：应为 sqlite:///path/file.db、sqlite://relative.db 或 postgres://…"},
	{regexp.MustCompile(`^user (".*") not found$`), "没有用户 %s"},
	{regexp.MustCompile(`^user (".*") already exists$`), "用户 %s 已存在"},
	{regexp.MustCompile(`^user name is required$`), "需要用户名"},
	{regexp.MustCompile(`^no cohort (".*"|\d+)$`), "没有班级 %s"},
	{regexp.MustCompile(`^cohort slug (".*"): want `), "班级标识 %s 无效：只能用小写字母、数字、“.”、“_”或“-”（最多 64 个）"},
	{regexp.MustCompile(`^user (".*") is a learner: only an instructor account teaches a cohort$`), "用户 %s 是学员：只有讲师账号能任教一个班级"},
	{regexp.MustCompile(`^user (".*") is an (\S+) account, not a learner or an instructor$`), "用户 %s 是 %s 账号，不是学员或讲师"},
}
