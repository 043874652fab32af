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
	// Roster imports (accounts.Rosters), on the users page and the CLI.
	fb(`the roster is larger than `+fbNum+` MiB`, `名单超过 ${1} MiB`),
	fb(`the roster is not UTF-8 text \(save it as CSV UTF-8\)`, `名单不是 UTF-8 文本（请另存为“CSV UTF-8”）`),
	fb(`the roster is empty: it needs a header row \(name, email or student_number, section, role\)`, `名单为空：需要表头行（"name"、"email" 或 "student_number"、"section"、"role"）`),
	fb(`the roster has a header but no rows`, `名单只有表头，没有数据行`),
	fb(`the roster has `+fbNum+` problem\(s\); nothing was imported`, `名单有 ${1} 个问题，未导入任何内容`),
	fb(`the roster has more than `+fbNum+` rows; split it`, `名单超过 ${1} 行，请拆分`),
	fb(`… and `+fbNum+` more problems`, `……另有 ${1} 个问题`),
	fb(`line `+fbNum+`: unknown column (".*") \(want name, email, student_number, section, role, cohort\)`, `第 ${1} 行：未知的列 ${2}（可用的列："name"、"email"、"student_number"、"section"、"role"、"cohort"）`),
	fb(`line `+fbNum+`: column (".*") appears twice`, `第 ${1} 行：列 ${2} 出现了两次`),
	fb(`line `+fbNum+`: the roster needs an email or a student_number column \(the login name\)`, `第 ${1} 行：名单需要 "email" 或 "student_number" 列（作为登录名）`),
	fb(`line `+fbNum+`: `+fbNum+` fields, the header has `+fbNum, `第 ${1} 行：有 ${2} 个字段，表头有 ${3} 个`),
	fb(`line `+fbNum+`: cohort (".*"): lower-case letters, digits, '.', '_' or '-', at most 64`, `第 ${1} 行：班次 ${2} 只能由小写字母、数字、“.”、“_”或“-”组成，最多 64 个字符`),
	fb(`line `+fbNum+`: student number (".*"): letters, digits, '.', '_' or '-', at most 64`, `第 ${1} 行：学号 ${2} 只能由字母、数字、“.”、“_”或“-”组成，最多 64 个字符`),
	fb(`line `+fbNum+`: no email or student number`, `第 ${1} 行：没有邮箱或学号`),
	fb(`line `+fbNum+`: email (".*") is not an address`, `第 ${1} 行：邮箱 ${2} 不是有效的地址`),
	fb(`line `+fbNum+`: name: at most 200 printable characters`, `第 ${1} 行：姓名最多 200 个可打印字符`),
	fb(`line `+fbNum+`: section (".*"): at most 64 printable characters`, `第 ${1} 行：班级 ${2} 最多 64 个可打印字符`),
	fb(`line `+fbNum+`: role (".*"): want learner, instructor or admin`, `第 ${1} 行：角色 ${2} 无效（应为 "learner"、"instructor" 或 "admin"）`),
	fb(`line `+fbNum+`: (\S+) is also on line `+fbNum, `第 ${1} 行：${2} 也出现在第 ${3} 行`),
	fb(`(\S+) is a runner account; a roster cannot change it`, `${1} 是执行节点账号，名单不能修改它`),
	fb(`(\S+) is you: a roster cannot change your own role \((\S+) → (\S+)\)`, `${1} 是你自己：名单不能修改你自己的角色（${2} → ${3}）`),
	// A cohort's late penalty (policy.CohortLatePenalty).
	fb(`the late penalty is not valid`, `迟交扣分无效`),
	fb(`late penalty step `+fbNum+`: after must be >= 0 and multiplier in \[0, 1\]`, `迟交扣分第 ${1} 步：迟交时长须不小于 0，系数须在 0 到 1 之间`),
	fb(`late penalty: want a list of \{"after": "24h", "multiplier": 0.5\}: (.+)`, `迟交扣分：应为形如 [{"after": "24h", "multiplier": 0.5}] 的列表（解析器报告：“${1}”）`),
	// An LTI platform registration (lti.Platforms).
	fb(`the platform registration is not valid`, `平台注册信息无效`),
	fb(`issuer: empty`, `issuer（签发方）：为空`),
	fb(`client id: empty`, `client id（客户端编号）：为空`),
	fb(`deployment ids: none \(the platform shows its deployment id when the tool is added\)`, `deployment id（部署编号）：未填写（平台在添加本工具时会显示部署编号）`),
	fb(`(auth login URL|token URL|JWKS URL): want an https URL \(http only on a loopback host\), got (.*)`, `${1}：应为 https 地址（仅本机回环地址可用 http），实际为 ${2}`),
	fb(`audience: no spaces`, `audience（受众）：不能包含空白`),
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
