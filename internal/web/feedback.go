package web

import (
	"regexp"
	"strconv"
	"strings"
)

// The grader writes its feedback in English (it is stored with the
// submission and returned by the API as is). The pages show it in the
// viewer's language: a message is split at "; " into clauses, and each
// clause is matched against the grader's message patterns below
// (internal/scoring, internal/compare, internal/notebook). Captured parts
// — numbers, MIME types, question ids, the learner's own exception text —
// are carried over unchanged. TestFeedbackCatalogCoversGrader checks that
// every message format in the grader's sources has a pattern here.

type feedbackPattern struct {
	re *regexp.Regexp
	zh string // regexp.Expand template
}

func fb(pattern, zh string) feedbackPattern {
	return feedbackPattern{re: regexp.MustCompile(`^` + pattern + `$`), zh: zh}
}

// n matches a number as the grader formats it (%d, %g).
const fbNum = `(-?[0-9][0-9.e+-]*)`

var feedbackPatterns = []feedbackPattern{
	// internal/scoring: summaries and per-cell outcomes.
	fb(`all graded cells pass`, `所有评分单元格均通过`),
	fb(fbNum+` of `+fbNum+` graded cells pass`, `${2} 个评分单元格中 ${1} 个通过`),
	fb(`submitted after the deadline: score multiplied by `+fbNum, `截止时间后提交：分数乘以 ${1}`),
	fb(`output matches`, `输出一致`),
	fb(`the cell was not run`, `该单元格未运行`),
	fb(`the cell was not found in the executed notebook`, `执行后的笔记本中找不到该单元格`),
	fb(`the cell raised (.+)`, `该单元格抛出异常 ${1}`),
	fb(`not run on this runner: (.+)`, `未在此执行节点上运行：${1}`),
	fb(`not counted`, `不计分`),
	fb(`the exercise's grading rule for this hidden test is invalid`, `本练习中该隐藏测试的评分规则有误`),
	fb(`the exercise's grading rule for this cell is invalid`, `本练习中该单元格的评分规则有误`),
	fb(`please tell your instructor`, `请告知你的教师`),
	fb(`all-or-nothing group (\S+) is not complete, so this cell earns no points`, `全对才得分的题组 ${1} 未全部通过，本单元格不得分`),
	fb(`hidden test passes`, `隐藏测试通过`),
	// internal/grade/manual.go and scoring.ManualPending: manual grading.
	fb(`this question is graded by an instructor`, `本题由教师人工评分`),
	fb(`graded by an instructor`, `已由教师人工评分`),
	fb(fbNum+` questions wait for manual grading`, `${1} 道题等待人工评分`),
	fb(`1 question waits for manual grading`, `1 道题等待人工评分`),
	fb(`points set to `+fbNum+` of `+fbNum+` by an instructor`, `教师将得分改为 ${1} / ${2}`),
	fb(`a hidden test of (\S+) did not run: (.+)`, `${1} 的一项隐藏测试未运行：${2}`),
	fb(`a hidden test of (\S+) was not run`, `${1} 的一项隐藏测试未运行`),
	fb(`a hidden test of (\S+) did not finish in time`, `${1} 的一项隐藏测试未按时完成`),
	fb(`the hidden test of (\S+) has no reference outputs for this run`, `${1} 的隐藏测试在本次运行中没有参考输出`),
	fb(`a hidden test of (\S+) raised an exception`, `${1} 的一项隐藏测试抛出了异常`),
	fb(`a hidden test of (\S+) gave a different result than the reference answer`, `${1} 的一项隐藏测试结果与参考答案不同`),
	fb(fbNum+` of `+fbNum+` hidden tests of this question pass, so it earns `+fbNum+` of `+fbNum+` points`, `本题 ${2} 项隐藏测试中 ${1} 项通过，得 ${3} / ${4} 分`),
	// internal/scoring/limits.go: resource limits.
	fb(`cell `+fbNum+` was still running when the whole notebook hit its `+fbNum+`s limit`, `整个笔记本达到 ${2} 秒时限时，第 ${1} 个单元格仍在运行`),
	fb(`it was stopped`, `已被停止`),
	fb(`cell `+fbNum+` did not finish within its `+fbNum+`s time limit and did not stop when interrupted, so the kernel was stopped`, `第 ${1} 个单元格未在 ${2} 秒时限内完成且中断后仍未停止，内核已被停止`),
	fb(`cell `+fbNum+` exceeded the (.+) memory limit`, `第 ${1} 个单元格超出了 ${2} 的内存限制`),
	fb(`the kernel was stopped`, `内核已被停止`),
	fb(`the kernel died while cell `+fbNum+` ran \(os\._exit\(\), a signal, or a crash\)`, `第 ${1} 个单元格运行时内核退出（os._exit()、信号或崩溃）`),
	fb(`the cells after it were not run`, `其后的单元格未运行`),
	fb(`the cell did not finish within its `+fbNum+`s time limit and was interrupted`, `该单元格未在 ${1} 秒时限内完成，已被中断`),
	fb(`cell `+fbNum+` raised an error after the notebook hit the limit of `+fbNum+` processes/threads`, `笔记本达到 ${2} 个进程/线程的上限后，第 ${1} 个单元格出错`),
	// internal/notebook: integrity of graded and locked cells.
	fb(`this cell was deleted from the notebook`, `该单元格已从笔记本中删除`),
	fb(`this graded cell was deleted from the notebook`, `该评分单元格已从笔记本中删除`),
	fb(`it was restored from the template and not graded`, `已按模板恢复，不评分`),
	fb(`this cell is locked but its code was changed`, `该单元格已锁定，但代码被修改`),
	fb(`the original code was run and the cell earns no points`, `已运行原始代码，该单元格不得分`),
	// internal/compare: output comparisons.
	fb(`unknown compare mode (".*")`, `未知的比较方式 ${1}`),
	fb(`output differs from the expected output at line `+fbNum+` \(column `+fbNum+`\)`, `输出第 ${1} 行（第 ${2} 列）与期望输出不同`),
	fb(`output differs from the expected output at line `+fbNum+` \(token `+fbNum+`\): got (.+)`, `输出第 ${1} 行（第 ${2} 个词）与期望输出不同：实际为 ${3}`),
	fb(`output ends early, after line `+fbNum+` \(expected `+fbNum+` lines?, got `+fbNum+`\)`, `输出在第 ${1} 行后提前结束（期望 ${2} 行，实际 ${3} 行）`),
	fb(`output ends early, after line `+fbNum+` \(token `+fbNum+`\)`, `输出在第 ${1} 行（第 ${2} 个词）后提前结束`),
	fb(`output ends early, after line `+fbNum+` \(token `+fbNum+`\) \(expected `+fbNum+` lines?, got `+fbNum+`\)`, `输出在第 ${1} 行（第 ${2} 个词）后提前结束（期望 ${3} 行，实际 ${4} 行）`),
	fb(`unexpected extra output from line `+fbNum+` on \(expected `+fbNum+` lines?, got `+fbNum+`\)`, `从第 ${1} 行起有多余的输出（期望 ${2} 行，实际 ${3} 行）`),
	fb(`unexpected extra output at line `+fbNum+` \(token `+fbNum+`\): got (.+?)(?: \(expected `+fbNum+` lines?, got `+fbNum+`\))?`, `第 ${1} 行（第 ${2} 个词）有多余的输出：${3}`),
	fb(`unexpected extra whitespace at line `+fbNum+`(?: \(expected `+fbNum+` lines?, got `+fbNum+`\))?`, `第 ${1} 行有多余的空白`),
	fb(`whitespace differs from the expected output at line `+fbNum+` \(after token `+fbNum+`\)`, `第 ${1} 行（第 ${2} 个词之后）的空白与期望输出不同`),
	fb(`line `+fbNum+` \(token `+fbNum+`\): number (\S+) is outside the tolerance \((.+)\)`, `第 ${1} 行（第 ${2} 个词）：数值 ${3} 超出容差（${4}）`),
	fb(`expected a number at line `+fbNum+` \(token `+fbNum+`\), got (.+)`, `第 ${1} 行（第 ${2} 个词）应为数值，实际为 ${3}`),
	fb(`the cell wrote to stderr`, `该单元格向标准错误流输出了内容`),
	fb(`the output is empty \(only whitespace\)`, `输出为空（只有空白）`),
	fb(`the expected output is not a valid regular expression \(an error in the exercise, not in your answer\)`, `期望输出不是有效的正则表达式（这是练习的错误，不是你的答案的错误）`),
	fb(`the expected output is not a valid regular expression: (.+)`, `期望输出不是有效的正则表达式：${1}`),
	fb(`some expected lines are missing`, `缺少部分期望的输出行`),
	fb(`output does not match the expected pattern`, `输出与期望的模式不匹配`),
	fb(`expected `+fbNum+` lines?, got `+fbNum, `期望 ${1} 行，实际 ${2} 行`),
	fb(`line `+fbNum+` of the output is not in the expected output: got (.+)`, `输出第 ${1} 行不在期望输出中：实际为 ${2}`),
	fb(`(\S+): expected `+fbNum+` outputs?, got `+fbNum, `${1}：期望 ${2} 个输出，实际 ${3} 个`),
	fb(`(\S+): output `+fbNum+` differs from the expected output \(got (.+)\)`, `${1}：第 ${2} 个输出与期望输出不同（实际为 ${3}）`),
	fb(`no output on (\S+)`, `${1} 上没有输出`),
	fb(`unexpected output on (\S+) \(the expected output has none\)`, `${1} 上有多余的输出（期望输出中没有）`),
	fb(`expected an exception, got none`, `期望抛出异常，但没有异常`),
	fb(`expected an exception of type (\S+), got none`, `期望抛出 ${1} 类型的异常，但没有异常`),
	fb(`expected an exception of type (\S+), got (.+)`, `期望抛出 ${1} 类型的异常，实际为 ${2}`),
	fb(`the message of the (\S+) differs from the expected one: got (.+)`, `${1} 的异常信息与期望不同：实际为 ${2}`),
	fb(`no (\S+) output on either side: the reference has no image to compare with \(an error in the exercise\)`, `双方都没有 ${1} 输出：参考答案中没有可比较的图片（这是练习的错误）`),
	fb(`(\S+): expected `+fbNum+` images?, got `+fbNum, `${1}：期望 ${2} 张图片，实际 ${3} 张`),
	fb(`(\S+): the reference image `+fbNum+` cannot be read \(an error in the exercise\)`, `${1}：无法读取第 ${2} 张参考图片（这是练习的错误）`),
	fb(`(\S+): image `+fbNum+` of the output is not a valid (\S+) image`, `${1}：输出中的第 ${2} 张图片不是有效的 ${3} 图片`),
	fb(`(\S+): image `+fbNum+` is ([0-9]+x[0-9]+) pixels, not the expected size(?: \(([0-9]+x[0-9]+)\))?`, `${1}：第 ${2} 张图片为 ${3} 像素，与期望尺寸 ${4} 不符`),
	fb(`(\S+): image `+fbNum+` differs from the expected image and is too large to compare perceptually`, `${1}：第 ${2} 张图片与期望图片不同，且太大无法做感知比较`),
	fb(`(\S+): image `+fbNum+` differs from the expected image \(perceptual hash distance `+fbNum+`, at most `+fbNum+` allowed\)`, `${1}：第 ${2} 张图片与期望图片不同（感知哈希距离 ${3}，最多允许 ${4}）`),
	// internal/domain and internal/envprobe: why a cell was not run here.
	fb(`needs an NPU runner`, `需要 NPU 执行节点`),
	fb(`needs an NPU runner \(Atlas (\S+)\)`, `需要 NPU 执行节点（Atlas ${1}）`),
	fb(`needs a cpu runner`, `需要 CPU 执行节点`),
	fb(`needs (.+)`, `需要 ${1}`),
	fb(`this runner has the (\S+) profile`, `此执行节点的配置为 ${1}`),
	fb(`this runner is (.+)`, `此执行节点为 ${1}`),
	fb(`this runner's environment has not been validated`, `此执行节点的环境尚未验证`),
	fb(`this runner's environment is unsupported(.*)`, `此执行节点的环境不受支持${1}`),
	fb(`unknown feature (".*")`, `未知的功能 ${1}`),
	fb(`contradictory requirement: accelerator cpu with an NPU product, TorchAir release or feature`, `矛盾的要求：加速器为 cpu，却指定了 NPU 型号、TorchAir 版本或功能`),
	// internal/scoring and the driver's kernel guard: tests the kernel's
	// own report decides.
	fb(`a hidden test of (\S+) cannot be trusted: (.+)`, `${1} 的隐藏测试不可信：${2}`),
	fb(`this test cannot be trusted: (.+)`, `此测试不可信：${1}`),
	fb(`expected an exception, but the cell raised none`, `期望抛出异常，但该单元格没有抛出异常`),
	fb(`the cell raised an exception`, `该单元格抛出了异常`),
	fb(`the notebook changed how the kernel runs code, so this test cannot be trusted`, `笔记本改变了内核执行代码的方式，因此此测试不可信`),
	fb(`the notebook changed the kernel while this test ran \((.+)\)`, `此测试运行期间笔记本修改了内核（${1}）`),
	fb(`the kernel did not answer the test guard \((.+)\)`, `内核没有响应测试保护（${1}）`),
	fb(`the kernel guard could not be installed: (.+)`, `无法安装内核测试保护：${1}`),
	// internal/httpapi: the redaction of hidden questions.
	fb(`details of this question are hidden`, `本题的详细信息已隐藏`),
	fb(`details of this question are shown once your instructor releases feedback`, `本题的详细信息将在教师发布反馈后显示`),
	fb(`feedback on this exercise is shown after the due date \((.+)\)`, `本练习的反馈将在截止时间（${1}）之后显示`),
	fb(`feedback on this exercise is shown once your instructor releases it`, `本练习的反馈将在教师发布后显示`),
	fb(`details of this question are shown after the due date \((.+)\)`, `本题的详细信息将在截止时间（${1}）之后显示`),
	// internal/execution: why a run ended early (summaries of failed runs).
	fb(`the executed notebook is larger than the (.+) limit`, `执行后的笔记本超过了 ${1} 的上限`),
	fb(`the kernel stopped before the notebook finished \((.*)\)`, `笔记本完成之前内核已停止（${1}）`),
}

// ChineseFeedback is a grader message in the words the pages give a
// zh-CN reader, for the API and the notebook client to give the same.
func ChineseFeedback(msg string) string { return translateFeedback(langZH, msg) }

// translateFeedback returns a grader message in lang. Clauses no pattern
// matches stay English (the catalog test keeps that from happening).
func translateFeedback(lang, msg string) string {
	if lang != langZH || msg == "" {
		return msg
	}
	// The exercise author's own feedback follows the grader's on new lines.
	head, authored, hasAuthored := strings.Cut(msg, "\n")
	parts := strings.Split(head, "; ")
	for i, p := range parts {
		if zh, ok := feedbackClause(p); ok {
			parts[i] = zh
		}
	}
	out := strings.Join(parts, "；")
	if hasAuthored {
		out += "\n" + authored
	}
	return out
}

// targetPrefix is the output a comparison names before its message
// ("stdout: …", "image/png: …").
var targetPrefix = regexp.MustCompile(`^([A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)?): (.+)$`)

func feedbackClause(s string) (string, bool) {
	return clause(s, 2)
}

// clause translates one clause; a captured reason that is itself a
// grader message ("not run on this runner: needs an NPU runner") is
// translated too, depth levels deep.
func clause(s string, depth int) (string, bool) {
	for _, p := range feedbackPatterns {
		m := p.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		tmpl := p.zh
		for i := len(m) - 1; i >= 1; i-- {
			v := m[i]
			if depth > 0 {
				if zh, ok := clause(v, depth-1); ok {
					v = zh
				}
			}
			tmpl = strings.ReplaceAll(tmpl, "${"+strconv.Itoa(i)+"}", v)
		}
		return tmpl, true
	}
	if m := targetPrefix.FindStringSubmatch(s); m != nil && depth > 0 {
		if zh, ok := clause(m[2], depth-1); ok {
			return m[1] + "：" + zh, true
		}
	}
	return "", false
}
