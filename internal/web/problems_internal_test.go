package web

import (
	"regexp"
	"testing"
)

// TestProblemsInChinese: the problems the pages show a learner are worded
// in Chinese whole, even those with "; " inside, and a list of several is
// worded one by one; English readers get them as written.
func TestProblemsInChinese(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"the submission is not valid": "提交无效",
		"2 of your uploads are waiting to be graded, the most at once; send this one when one of them is graded": "你已有 2 份上传在等待评分，已达上限；请在其中一份评分完成后再提交",
		"at most 5 submissions of exercise ch1 per 1h0m0s; try again in 12s":                                     "练习 ch1 每 1h0m0s 最多提交 5 次；请在 12s 后重试",
		"you have used all 3 submissions of exercise ch1":                                                        "练习 ch1 的 3 次提交机会已全部用完",
		`unknown exercise "ch99"; notebook is not valid JSON: invalid character 'h' in literal true`:             `未知的练习 "ch99"；笔记本不是有效的 JSON（解析器报告：“invalid character 'h' in literal true”）`,
		"the notebook is larger than the 8388608 byte limit":                                                     "笔记本超过 8388608 字节的上限",
		`line 4: email "x@" is not an address`:                                                                   `第 4 行：邮箱 "x@" 不是有效的地址`,
		"line 7: s12 is also on line 3":                                                                          "第 7 行：s12 也出现在第 3 行",
		"late penalty step 2: after must be >= 0 and multiplier in [0, 1]":                                       "迟交扣分第 2 步：迟交时长须不小于 0，系数须在 0 到 1 之间",
		`token URL: want an https URL (http only on a loopback host), got "http://lms.example"`:                  `token URL：应为 https 地址（仅本机回环地址可用 http），实际为 "http://lms.example"`,
		"the roster has 2 problem(s); nothing was imported":                                                      "名单有 2 个问题，未导入任何内容",
	} {
		if got := problemText(langZH, in); got != want {
			t.Errorf("%q in Chinese: %q, want %q", in, got, want)
		}
		if got := problemText(langEN, in); got != in {
			t.Errorf("%q in English: %q", in, got)
		}
	}
	// Every pattern's Chinese names every part it captures.
	for _, p := range problemPatterns {
		for i := 1; i <= p.re.NumSubexp(); i++ {
			if !regexp.MustCompile(`\$\{` + string(rune('0'+i)) + `\}`).MatchString(p.zh) {
				t.Errorf("%s: the Chinese drops ${%d}", p.re, i)
			}
		}
	}
}
