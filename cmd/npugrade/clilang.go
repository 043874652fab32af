package main

import (
	"strings"

	"github.com/npugrade/npugrade/internal/web"
)

// The learner-facing commands speak the learner's language: zh-CN when
// the locale says Chinese, else English.
const (
	langZH = "zh-CN"
	langEN = "en"
)

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
