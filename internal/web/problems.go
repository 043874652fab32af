package web

import "strings"

// The problems a learner meets on the pages (an upload refused, a cap
// reached) are written in English by the packages that find them; these
// patterns word them for a Chinese reader, as feedbackPatterns do the
// grader's messages. A problem no pattern matches stays as it is.
var problemPatterns = []feedbackPattern{
	fb(`the submission is not valid`, `提交无效`),
	fb(`choose a notebook file \(\.ipynb\)`, `请选择笔记本文件（.ipynb）`),
	fb(`the form file "notebook" is required`, `缺少表单文件 "notebook"`),
	fb(`the upload is larger than the `+fbNum+` byte limit`, `上传内容超过 ${1} 字节的上限`),
	fb(`the notebook is larger than the `+fbNum+` byte limit`, `笔记本超过 ${1} 字节的上限`),
	fb(`notebook too large: `+fbNum+` bytes, the limit is `+fbNum, `笔记本过大：${1} 字节，上限为 ${2} 字节`),
	fb(`notebook is not valid JSON: (.+)`, `笔记本不是有效的 JSON（解析器报告：“${1}”）`),
	fb(`notebook is not valid UTF-8`, `笔记本不是有效的 UTF-8 文本`),
	fb(`notebook has no "cells" list`, `笔记本缺少 "cells" 列表`),
	fb(`nbformat (\S+) is not supported \(only (\S+)\)`, `不支持 nbformat ${1}（仅支持 ${2}）`),
	fb(`notebook has more than `+fbNum+` cells, the limit is `+fbNum, `笔记本的单元格超过 ${1} 个，上限为 ${2} 个`),
	fb(`notebook has `+fbNum+` cells, the limit is `+fbNum, `笔记本有 ${1} 个单元格，上限为 ${2} 个`),
	fb(`notebook JSON is nested deeper than `+fbNum+` levels`, `笔记本 JSON 的嵌套超过 ${1} 层`),
	fb(`cell `+fbNum+` has unknown cell_type (".*")`, `第 ${1} 个单元格的 cell_type ${2} 未知`),
	fb(`unknown exercise (".*")`, `未知的练习 ${1}`),
	fb(fbNum+` of your uploads are waiting to be graded, the most at once; send this one when one of them is graded`,
		`你已有 ${1} 份上传在等待评分，已达上限；请在其中一份评分完成后再提交`),
	fb(`at most `+fbNum+` uploads per (\S+); try again in (\S+)`, `每 ${2} 最多上传 ${1} 次；请在 ${3} 后重试`),
	fb(`at most `+fbNum+` submissions of exercise (\S+) per (\S+); try again in (\S+)`, `练习 ${2} 每 ${3} 最多提交 ${1} 次；请在 ${4} 后重试`),
	fb(`you have used all `+fbNum+` submissions of exercise (\S+)`, `练习 ${2} 的 ${1} 次提交机会已全部用完`),
	// The staff's forms.
	fb(`the manual grade is invalid`, `人工评分无效`),
	fb(`adjustment (".*"): not a number`, `调整分 ${1} 不是数字`),
	fb(`the answer is invalid`, `答复无效`),
	fb(`points (".*"): not a number`, `分数 ${1} 不是数字`),
	fb(`the release is invalid`, `发布无效`),
	fb(`learner: user (".*") not found`, `学员：找不到用户 ${1}`),
	// The extension form (grade.Extensions' checks).
	fb(`learner: (".*") is a (\S+), not a learner`, `学员：${1} 的角色是 ${2}，不是学员`),
	fb(`deadline: exercise (\S+) has no deadline to extend`, `截止时间：练习 ${1} 没有可延长的截止时间`),
	fb(`deadline: (\S+) is not after the exercise's deadline (\S+)`, `截止时间：${1} 不晚于练习的截止时间 ${2}`),
	fb(`late_penalty\[`+fbNum+`\]: after must be >= 0 and multiplier in \[0, 1\]`, `迟交扣分第 ${1} 项：迟交时长须不小于 0，系数须在 0 到 1 之间`),
	fb(`deadline: a deadline is required \(RFC 3339, e.g. (\S+)\)`, `截止时间：必须填写（RFC 3339 格式，例如 ${1}）`),
	fb(`deadline: (".*") is not a date and time \(RFC 3339, e.g. (\S+)\)`, `截止时间：${1} 不是日期时间（RFC 3339 格式，例如 ${2}）`),
}

// ChineseProblem is a problem's message or detail in the words the
// pages give a zh-CN reader, for the API to word its problems the same.
func ChineseProblem(msg string) string { return problemText(langZH, msg) }

// problemText returns msg in lang; several problems joined by "; " are
// worded one by one.
func problemText(lang, msg string) string {
	if lang != langZH || msg == "" {
		return msg
	}
	if zh, ok := problemClause(msg); ok {
		return zh
	}
	parts := strings.Split(msg, "; ")
	for i, p := range parts {
		if zh, ok := problemClause(p); ok {
			parts[i] = zh
		}
	}
	return strings.Join(parts, "；")
}

func problemClause(s string) (string, bool) {
	for _, pat := range problemPatterns {
		if m := pat.re.FindStringSubmatchIndex(s); m != nil {
			return string(pat.re.ExpandString(nil, pat.zh, s, m)), true
		}
	}
	return "", false
}

// problemTexts is problemText of each of problems.
func problemTexts(lang string, problems []string) []string {
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = problemText(lang, p)
	}
	return out
}
