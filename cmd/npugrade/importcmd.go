package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

const importUsage = `usage: npugrade exercise import [-o OUT] NOTEBOOK
       npugrade exercise import --id ID [--exercises DIR] [--answers DIR] [--replace] NOTEBOOK
       npugrade exercise import --from learning-hub --id ID [--exercises DIR] [--answers DIR] [--answer-text FILE] [--replace] NOTEBOOK
       npugrade exercise import --from learning-hub --all TUTORIAL_DIR [--exercises DIR] [--answers DIR] [--replace]`

// importFlags are the flags of npugrade exercise import.
type importFlags struct {
	from, out, id, exDir, ansDir, answerText, all string
	replace, nbgraderStderr                       bool
}

// cmdExerciseImport converts an nbgrader, nbval, nbclient, papermill or
// quiz-style notebook (or, with --from learning-hub, a learning-hub
// notebook and its answer text) and either prints the converted notebook
// or, with --id, writes a complete exercise. What each cell became goes to
// stderr; an import with problems lists them all and writes nothing.
func cmdExerciseImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand(ctx, "exercise import", "NOTEBOOK", "Convert an nbgrader, nbval, nbclient, papermill or quiz-style notebook (or, with --from\n"+
		"learning-hub, a learning-hub notebook with its answer text) into one with metadata.grader;\n"+
		"with --id write a complete exercise. What each cell became is printed on stderr.\n\n"+importUsage)
	var f importFlags
	from := c.Choice("from", "auto", []string{"auto", "learning-hub"}, "source format: auto (nbgrader, nbval, nbclient, papermill, quiz cells) or learning-hub")
	c.StringVar(&f.out, "o", "", "write the converted notebook here (default: stdout; without --id)")
	c.StringVar(&f.id, "id", "", "write a complete exercise with this id into --exercises and --answers")
	c.StringVar(&f.exDir, "exercises", "exercises", "exercises directory")
	c.StringVar(&f.ansDir, "answers", "answers", "answers directory")
	c.StringVar(&f.answerText, "answer-text", "", "learning hub: the answer text (default: answer/<NN.0x>_answer.txt beside the notebook)")
	c.StringVar(&f.all, "all", "", "learning hub: import every notebook under this tutorial directory that has an answer text")
	c.BoolVar(&f.replace, "replace", false, "replace an exercise that already exists")
	c.BoolVar(&f.nbgraderStderr, "nbgrader-stderr", false, "nbgrader: a test cell that writes to stderr fails, as nbgrader scores it")
	pos, code, ok := c.parse(args, 0, 1, stdout, stderr)
	if !ok {
		return code
	}
	w := c.words()
	f.from = *from
	switch {
	case f.all != "" && (f.from != "learning-hub" || len(pos) != 0 || f.id != ""):
		return c.usageError(stderr, w.T("--all needs --from learning-hub, and no --id or NOTEBOOK"))
	case f.all != "":
		return importHubTree(f, w, stdout, stderr)
	case len(pos) != 1:
		return c.usageError(stderr, w.F("missing argument %s", "NOTEBOOK"))
	case f.from == "learning-hub" && f.id == "":
		return c.usageError(stderr, w.T("--from learning-hub needs --id (or --all)"))
	}
	path := pos[0]
	nb, rep, err := importOne(f, w, path)
	printReport(stderr, w, rep)
	if err != nil {
		fmt.Fprintf(stderr, "npugrade exercise import: %s: %s\n", path, sysProblem(w, err))
		return exitError
	}
	if f.id != "" {
		if err := writeExercise(f, w, path, nb); err != nil {
			fmt.Fprintf(stderr, "npugrade exercise import: %s: %s\n", path, sysProblem(w, err))
			return exitError
		}
		fmt.Fprint(stdout, w.F("%s: wrote %s and %s; record its references with: npugrade check --only %s --update-reference\n",
			f.id, filepath.Join(f.exDir, f.id), filepath.Join(f.ansDir, f.id), f.id))
		return exitOK
	}
	converted, err := notebook.Encode(nb)
	if err == nil && f.out != "" {
		err = os.WriteFile(f.out, converted, 0o644)
	} else if err == nil {
		_, err = stdout.Write(converted)
	}
	if err != nil {
		fmt.Fprintln(stderr, "npugrade exercise import:", sysProblem(w, err))
		return exitError
	}
	return exitOK
}

// printReport lists the formats found and what each cell became (the
// importer's notes, in w's language; the notebook's own markers and
// grader words stay as they are).
func printReport(out io.Writer, w words, rep importer.Report) {
	fmt.Fprintf(out, "%s %v\n", w.T("formats:"), rep.Formats)
	for _, n := range rep.NotesIn(w.F) {
		fmt.Fprintln(out, "  "+n)
	}
}

// importOne converts one notebook with the chosen importer.
func importOne(f importFlags, w words, path string) (*notebook.Notebook, importer.Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, importer.Report{}, err
	}
	if f.from != "learning-hub" {
		nb, err := notebook.Parse(raw, notebook.Limits{})
		if err != nil {
			return nil, importer.Report{}, err
		}
		out, rep, err := importer.ImportWith(nb, importer.Options{NbgraderStderr: f.nbgraderStderr})
		if err != nil || len(rep.Formats) > 0 || !isHubNotebook(nb, path, f.answerText) {
			return out, rep, err
		}
		// A learning-hub notebook (it prints its answer file, which is
		// there): nothing else to convert, so read it as one.
	}
	src := importer.HubSource{Notebook: raw}
	txtPath := f.answerText
	if txtPath == "" {
		txtPath = hubAnswerPath(path, ".txt")
	}
	txt, err := os.ReadFile(txtPath)
	if err != nil {
		return nil, importer.Report{}, w.Errorf("answer text: %s", sysProblem(w, err))
	}
	src.AnswerText = string(txt)
	if lab, err := os.ReadFile(hubAnswerPath(path, ".ipynb")); err == nil {
		src.Lab = lab
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, importer.Report{}, w.Errorf("lab answer notebook: %s", sysProblem(w, err))
	}
	return importer.ImportHub(src)
}

var hubPrefix = regexp.MustCompile(`^(\d+)\.(\d+)`)

// isHubNotebook reports whether a notebook is a learning-hub one: a code
// cell prints answer/…_answer.txt, and that answer text (or --answer-text)
// exists.
func isHubNotebook(nb *notebook.Notebook, path, answerText string) bool {
	if answerText == "" {
		answerText = hubAnswerPath(path, ".txt")
	}
	if _, err := os.Stat(answerText); err != nil {
		return false
	}
	for _, c := range nb.Cells {
		if c.CellType == "code" && strings.Contains(string(c.Source), "_answer.txt") {
			return true
		}
	}
	return false
}

// hubAnswerPath is answer/<NN.0x>_answer<ext> beside a hub notebook.
func hubAnswerPath(nbPath, ext string) string {
	base := filepath.Base(nbPath)
	prefix := strings.TrimSuffix(base, filepath.Ext(base))
	if m := hubPrefix.FindString(base); m != "" {
		prefix = m
	}
	return filepath.Join(filepath.Dir(nbPath), "answer", prefix+"_answer"+ext)
}

// hubID derives an exercise id from a hub notebook's file name:
// 01.05_chapter_practice.ipynb -> hub-01-05.
func hubID(nbPath string) string {
	base := filepath.Base(nbPath)
	if m := hubPrefix.FindStringSubmatch(base); m != nil {
		return "hub-" + m[1] + "-" + m[2]
	}
	id := strings.ToLower(strings.TrimSuffix(base, filepath.Ext(base)))
	return "hub-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(id, "-")
}

// importHubTree imports every notebook of a tutorial tree that has an
// answer text, one exercise each; a notebook that fails is reported with
// its problems and the others are still imported.
func importHubTree(f importFlags, w words, stdout, stderr io.Writer) int {
	var paths []string
	err := filepath.WalkDir(f.all, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "answer" || strings.HasPrefix(d.Name(), ".")) && p != f.all {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ipynb") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "npugrade exercise import:", sysProblem(w, err))
		return exitError
	}
	code, done := exitOK, 0
	for _, p := range paths {
		if _, err := os.Stat(hubAnswerPath(p, ".txt")); err != nil {
			fmt.Fprint(stdout, w.F("%s: skipped (no %s)\n", p, filepath.Base(hubAnswerPath(p, ".txt"))))
			continue
		}
		one := f
		one.id = hubID(p)
		nb, rep, err := importOne(one, w, p)
		if err == nil {
			err = writeExercise(one, w, p, nb)
		}
		if err != nil {
			printReport(stderr, w, rep)
			fmt.Fprintf(stderr, "npugrade exercise import: %s: %s\n", p, sysProblem(w, err))
			code = exitError
			continue
		}
		done++
		fmt.Fprint(stdout, w.F("%s: exercise %s (%s)\n", p, one.id, w.N("n.notes", len(rep.Notes))))
	}
	fmt.Fprint(stdout, w.F("imported %s; record their references with: npugrade check --update-reference\n", w.N("n.exercises", done)))
	return code
}

// writeExercise writes exercises/<id>/ (exercise.json and the starter) and
// answers/<id>/ (the answer) only after the exercise loads: both are built
// in temporary directories, loaded with exercise.LoadOne, and then renamed
// into place, so a refused import leaves nothing behind.
func writeExercise(f importFlags, w words, srcPath string, nb *notebook.Notebook) error {
	if !regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]*$`).MatchString(f.id) {
		return w.Errorf("exercise id %q: use letters, digits, '-' and '_'", f.id)
	}
	exFinal, ansFinal := filepath.Join(f.exDir, f.id), filepath.Join(f.ansDir, f.id)
	for _, d := range []string{exFinal, ansFinal} {
		if _, err := os.Stat(d); err == nil && !f.replace {
			return w.Errorf("%s exists (pass --replace to overwrite it)", d)
		}
	}
	base := strings.TrimSuffix(filepath.Base(srcPath), filepath.Ext(srcPath))
	cfg := struct {
		ID      string `json:"id"`
		Title   string `json:"title"`
		TitleEN string `json:"title_en"`
		Starter string `json:"starter"`
		Answer  string `json:"answer"`
		// Requires defaults to what the notebook imports.
		Requires domain.Requirement `json:"requires,omitzero"`
	}{f.id, notebookTitle(nb, base), englishTitle(base), base + ".ipynb", base + "_answer.ipynb", importer.RequiresFromImports(nb)}
	answer, err := notebook.Encode(nb)
	if err != nil {
		return err
	}
	cfgJSON, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode exercise.json: %w", err)
	}
	var tmps []string
	defer func() {
		for _, t := range tmps {
			_ = os.RemoveAll(t)
		}
	}()
	dirs := map[string]string{}
	for _, parent := range []string{f.exDir, f.ansDir} {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp(parent, ".import-")
		if err != nil {
			return err
		}
		tmps = append(tmps, tmp)
		dirs[parent] = filepath.Join(tmp, f.id)
		if err := os.Mkdir(dirs[parent], 0o755); err != nil {
			return err
		}
	}
	exTmp, ansTmp := dirs[f.exDir], dirs[f.ansDir]
	if err := os.WriteFile(filepath.Join(exTmp, "exercise.json"), append(cfgJSON, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ansTmp, cfg.Answer), answer, 0o644); err != nil {
		return err
	}
	ex, err := exercise.LoadOne(exTmp, ansTmp)
	if err != nil {
		return w.Errorf("the imported exercise does not load, nothing written: %w", err)
	}
	if err := os.WriteFile(filepath.Join(exTmp, cfg.Starter), ex.StarterBytes, 0o644); err != nil {
		return err
	}
	return moveInto(map[string]string{exTmp: exFinal, ansTmp: ansFinal})
}

// moveInto renames each built directory over its final place.
func moveInto(moves map[string]string) error {
	for from, to := range moves {
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("move %s into place: %w", to, err)
		}
	}
	return nil
}

// notebookTitle is the first "# " heading of the notebook, else fallback.
func notebookTitle(nb *notebook.Notebook, fallback string) string {
	for _, c := range nb.Cells {
		if c.CellType != "markdown" {
			continue
		}
		for _, ln := range strings.Split(string(c.Source), "\n") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(ln), "# "); ok && strings.TrimSpace(t) != "" {
				return strings.TrimSpace(t)
			}
		}
	}
	return fallback
}

// englishTitle: 01.05_chapter_practice -> "01.05 chapter practice".
func englishTitle(base string) string {
	return strings.TrimSpace(strings.ReplaceAll(base, "_", " "))
}
