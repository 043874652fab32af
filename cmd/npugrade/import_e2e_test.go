package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportLearningHubTree imports a tutorial tree written in the learning
// hub's layout (section notebook, chapter practices, answer texts, a lab
// answer notebook) and grades it through the real execution path:
// npugrade check records the references, then the answer key scores 100 %
// and each untouched starter 0 %.
func TestImportLearningHubTree(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "exercises"), filepath.Join(root, "answers")
	tree := filepath.Join("..", "..", "internal", "importer", "testdata", "hub", "tutorial")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exercise", "import", "--from", "learning-hub", "--all", tree,
		"--exercises", exDir, "--answers", ansDir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("import --all: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, id := range []string{"hub-01-02", "hub-01-03", "hub-02-04"} {
		if _, err := os.Stat(filepath.Join(exDir, id, "exercise.json")); err != nil {
			t.Fatalf("exercise %s not written: %v\n%s", id, err, out.String())
		}
	}
	// The written starters are the ones generated from the answers.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"exercise", "starter", "--check", "--exercises", exDir, "--answers", ansDir}, &out, &errb); code != exitOK {
		t.Fatalf("starter --check: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// Importing again without --replace is refused, and changes nothing.
	out.Reset()
	errb.Reset()
	one := filepath.Join(tree, "01_basics", "01.03_chapter_practice.ipynb")
	code = run(context.Background(), []string{"exercise", "import", "--from", "learning-hub", "--id", "hub-01-03",
		"--exercises", exDir, "--answers", ansDir, one}, &out, &errb)
	if code == exitOK || !strings.Contains(errb.String(), "--replace") {
		t.Fatalf("re-import without --replace: exit %d, %s", code, errb.String())
	}

	// A learner fills in the starter, spelling answers as learners do.
	answers := map[string]string{"q1": `"对"`, "q2": `False`, "q3": `"a"`, "q4": `"C。"`, "q5": `"A"`, "q6": `"A"`,
		"q7": `"b"`, "q8": `"A"`, "q9": `"B"`, "q10": `"B"`, "q11": `"C、A、B"`}
	filled := string(readFile(t, filepath.Join(exDir, "hub-01-03", "01.03_chapter_practice.ipynb")))
	for q, a := range answers {
		re := regexp.MustCompile(`"` + q + ` = None  #[^"\\]*(?:\\.[^"\\]*)*"`)
		if !re.MatchString(filled) {
			t.Fatalf("the starter has no %s = None cell", q)
		}
		b, _ := json.Marshal(q + " = " + a)
		filled = re.ReplaceAllLiteralString(filled, string(b))
	}
	fixtures := filepath.Join(ansDir, "hub-01-03", "fixtures")
	_ = os.MkdirAll(fixtures, 0o755)
	_ = os.WriteFile(filepath.Join(fixtures, "spellings.ipynb"), []byte(filled), 0o644)
	_ = os.WriteFile(filepath.Join(fixtures, "spellings.expected.json"), []byte(`{"cells": {"q1": "pass", "q2": "pass", "q11": "pass"}, "score": 60}`), 0o644)

	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"check", "--exercises", exDir, "--answers", ansDir, "--update-reference", "--jobs", "2"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// "hub-01-03 answer   01.03_chapter_practice_answer.ipynb   100.0/100   …  ok"
	line := regexp.MustCompile(`(?m)^(hub-\S+)\s+(answer|starter)\s+\S+\s+([0-9.]+)/([0-9.]+)\s`)
	scores := map[string][2]string{}
	for _, m := range line.FindAllStringSubmatch(out.String(), -1) {
		scores[m[1]+" "+m[2]] = [2]string{m[3], m[4]}
	}
	// hub-02-04's lab tasks are graded by hand (2 + 1 rubric points): the
	// answer key earns q1's point and waits for a person on the rest.
	answerScore := map[string]string{"hub-01-02": "2", "hub-01-03": "60", "hub-02-04": "1"}
	for id, max := range map[string]string{"hub-01-02": "2", "hub-01-03": "60", "hub-02-04": "4"} {
		if s := scores[id+" answer"]; s[0] != answerScore[id]+".0" || s[1] != max {
			t.Errorf("%s answer scores %v, want %s/%s", id, s, answerScore[id], max)
		}
		if s := scores[id+" starter"]; s[0] != "0.0" || s[1] != max {
			t.Errorf("%s starter scores %v, want 0/%s", id, s, max)
		}
	}
}

// TestImportLearningHubRefuses: a notebook its answer text does not fit is
// refused with every problem, and no half exercise is written.
func TestImportLearningHubRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "exercises"), filepath.Join(root, "answers")
	nb := filepath.Join("..", "..", "internal", "importer", "testdata", "hub", "broken", "03_bad", "03.01_quiz.ipynb")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"exercise", "import", "--from", "learning-hub", "--id", "bad",
		"--exercises", exDir, "--answers", ansDir, nb}, &out, &errb)
	if code == exitOK {
		t.Fatal("a broken hub notebook was imported")
	}
	for _, want := range []string{"也许", `"AB"`, "item 3 (多选题) has no answer", "answer 4 (单选题) has no question"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errb.String())
		}
	}
	for _, d := range []string{exDir, ansDir} {
		entries, _ := os.ReadDir(d)
		if len(entries) != 0 {
			t.Errorf("%s holds %d entries after a refused import", d, len(entries))
		}
	}
	// --all reports the broken notebook and fails, after importing nothing half.
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"exercise", "import", "--from", "learning-hub", "--all", filepath.Dir(filepath.Dir(nb)),
		"--exercises", exDir, "--answers", ansDir}, &out, &errb)
	if code == exitOK || !strings.Contains(errb.String(), "03.01_quiz.ipynb") {
		t.Errorf("--all over a broken tree: exit %d\n%s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(exDir, "hub-03-01")); err == nil {
		t.Error("--all wrote the broken exercise")
	}
}

// importFixture imports the notebook source as exercise id into a fresh
// catalogue and returns its folders and the answer's fixtures folder
// (made, empty).
func importFixture(t *testing.T, id, source string) (exDir, ansDir, fixtures string) {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir = filepath.Join(root, "exercises"), filepath.Join(root, "answers")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"exercise", "import", "--id", id, "--exercises", exDir, "--answers", ansDir,
		source}, &out, &errb); code != exitOK {
		t.Fatalf("import: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	fixtures = filepath.Join(ansDir, id, "fixtures")
	if err := os.MkdirAll(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	return exDir, ansDir, fixtures
}

// addFixtures copies the notebooks data/NAME.ipynb into fixtures, each
// with the verdicts it is expected to get (NAME.expected.json).
func addFixtures(t *testing.T, data, fixtures string, expected map[string]string) {
	t.Helper()
	for name, want := range expected {
		if err := os.WriteFile(filepath.Join(fixtures, name+".ipynb"), readFile(t, filepath.Join(data, name+".ipynb")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fixtures, name+".expected.json"), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportNbgraderAssignment imports an nbgrader source notebook as an
// exercise and grades, through npugrade check, the notebooks students
// submit in nbgrader's own format: each scores what nbgrader's autograder
// gives it (bitdiddle 2, hacker 5, the untouched release 0, of nbgrader's 5
// automatic points), and the manually graded answers (3 points) wait for a
// person.
func TestImportNbgraderAssignment(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	data := filepath.Join("..", "..", "internal", "importer", "testdata", "nbgrader")
	exDir, ansDir, fixtures := importFixture(t, "ps1", filepath.Join(data, "source.ipynb"))
	addFixtures(t, data, fixtures, map[string]string{
		"submitted_bitdiddle":  `{"cells": {"test_squares": "pass", "test_mean": "error"}, "score": 2}`,
		"submitted_hacker":     `{"cells": {"test_squares": "pass", "test_mean": "pass"}, "score": 5}`,
		"release":              `{"cells": {"test_squares": "mismatch", "test_mean": "error"}, "score": 0}`,
		"autograded_bitdiddle": `{"cells": {"test_squares": "pass", "test_mean": "error"}, "score": 2}`,
	})
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "--exercises", exDir, "--answers", ansDir, "--update-reference", "--jobs", "2"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// 3 of the 8 points are nbgrader's manually graded answers (explain 1,
	// plot 2): a person gives them, so the answer key scores 5 of 8 here.
	if !regexp.MustCompile(`(?m)^ps1\s+answer\s+\S+\s+5\.0/8\s`).MatchString(out.String()) {
		t.Errorf("the answer key does not score 5/8:\n%s", out.String())
	}
}

// TestImportOtterTutorial imports Otter-Grader's tutorial assignment and
// grades, through npugrade check on the host's Python (the assignment
// needs pandas), the notebooks Otter's tutorial ships as submissions,
// filled in from Otter's own student notebook: the passing one earns every
// automatic point (3 of 5; the two manual questions wait for a person), the
// one that fails a hidden test of q2 loses that test's half point, and the
// untouched starter scores 0.
func TestImportOtterTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	data := filepath.Join("..", "..", "internal", "importer", "testdata", "otter")
	exDir, ansDir, fixtures := importFixture(t, "demo", filepath.Join(data, "demo.ipynb"))
	addFixtures(t, data, fixtures, map[string]string{
		"demo-passesAll":    `{"cells": {"q1-test-1": "pass", "q1-hidden-1": "pass", "q2-hidden-1": "pass", "q3-hidden-4": "pass"}, "score": 3}`,
		"demo-fails2Hidden": `{"cells": {"q2-test-1": "pass", "q2-hidden-1": "error", "q3-test-1": "pass"}, "score": 2.5}`,
	})
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "--env", "host", "--exercises", exDir, "--answers", ansDir, "--update-reference", "--jobs", "2"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, row := range []string{`(?m)^demo\s+demo_answer\.ipynb\s+answer\s+3/5\s`, `(?m)^demo\s+demo\.ipynb\s+starter\s+0/5\s`} {
		if !regexp.MustCompile(row).MatchString(out.String()) {
			t.Errorf("no row %s:\n%s", row, out.String())
		}
	}
}

// TestImportNbvalPapermill imports an nbval notebook with papermill
// parameters and a solution region as an exercise: npugrade check gives the
// answer key 1/1, the untouched starter 0/1 and the starter filled in with
// a learner's own correct solution (written differently) 1/1.
func TestImportNbvalPapermill(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	data := filepath.Join("..", "..", "internal", "importer", "testdata")
	exDir, ansDir, fixtures := importFixture(t, "totals", filepath.Join(data, "nbval_papermill.ipynb"))
	// The learner downloads the starter and fills in the solution their own way.
	starter := string(readFile(t, filepath.Join(exDir, "totals", "nbval_papermill.ipynb")))
	filled := strings.Replace(starter, `"    # YOUR CODE HERE\n",`, `"    from itertools import accumulate\n", "    return list(accumulate(xs))\n",`, 1)
	if filled == starter {
		t.Fatalf("the starter has no placeholder:\n%s", starter)
	}
	_ = os.WriteFile(filepath.Join(fixtures, "filled.ipynb"), []byte(filled), 0o644)
	_ = os.WriteFile(filepath.Join(fixtures, "filled.expected.json"), []byte(`{"cells": {"check": "pass"}, "score": 1}`), 0o644)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check", "--exercises", exDir, "--answers", ansDir, "--update-reference"}, &out, &errb); code != exitOK {
		t.Fatalf("check: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, re := range []string{`(?m)^totals\s+answer\s+\S+\s+1\.0/1\s`, `(?m)^totals\s+starter\s+\S+\s+0\.0/1\s`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("check output lacks %s:\n%s", re, out.String())
		}
	}
}

// TestImportDetectsLearningHub: without --from, a notebook that prints its
// answer file, which is there, is read as a learning-hub notebook (the
// real 1.5 practice used to give "formats: []" and convert nothing).
func TestImportDetectsLearningHub(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "converted.ipynb")
	nb := filepath.Join("..", "..", "internal", "importer", "testdata", "hub", "tutorial", "01_basics", "01.03_chapter_practice.ipynb")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"exercise", "import", "-o", out, nb}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "formats: [learning-hub]") {
		t.Errorf("report: %s", stderr.String())
	}
	if b := readFile(t, out); !bytes.Contains(b, []byte(`\"compare\":\"choice\"`)) && !bytes.Contains(b, []byte(`"compare": "choice"`)) {
		t.Errorf("no choice check cells in the converted notebook:\n%.2000s", b)
	}
}
