package exercise

import "testing"

func TestQuestionHeading(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]int{
		"### 第 13 题（编程题，3 分）": 13, "## 第20题": 20, "# Question 3\ntext": 3, "### Q7.": 7,
		"## Exercise 4: lists": 4, "#### Problem 2": 2, "第 5 题": 0, "### Questions": 0, "## Quick start 1": 0,
	} {
		if got, ok := questionHeading(src); got != want || ok != (want > 0) {
			t.Errorf("questionHeading(%q) = %d, %v; want %d", src, got, ok, want)
		}
	}
}
