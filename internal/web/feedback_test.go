package web

import "testing"

// TestTranslateFeedbackClauses: messages seen on real learner pages, with
// an output's name before the message and reasons nested in reasons.
func TestTranslateFeedbackClauses(t *testing.T) {
	t.Parallel()
	for en, zh := range map[string]string{
		`stdout: output differs from the expected output at line 1 (token 2): got "√"`:              `stdout：输出第 1 行（第 2 个词）与期望输出不同：实际为 "√"`,
		"not run on this runner: needs an NPU runner; this runner has the cpu profile; not counted": "未在此执行节点上运行：需要 NPU 执行节点；此执行节点的配置为 cpu；不计分",
		"3 of 8 graded cells pass; submitted after the deadline: score multiplied by 0.5":           "8 个评分单元格中 3 个通过；截止时间后提交：分数乘以 0.5",
		"output matches\n解析：because":                                                                "输出一致\n解析：because",
	} {
		if got := translateFeedback(langZH, en); got != zh {
			t.Errorf("translateFeedback(%q)\n got %q\nwant %q", en, got, zh)
		}
	}
}
