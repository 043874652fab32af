package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/problem"
)

type submissionView struct {
	ID       string     `json:"id"`
	Exercise string     `json:"exercise"`
	Status   string     `json:"status"`
	Score    float64    `json:"score"`
	MaxScore float64    `json:"max_score"`
	Message  string     `json:"message"`
	Cells    []cellView `json:"cells"`
}

// cellView is a graded cell as the API gives it: the result, and the
// number the notebook gives its question.
type cellView struct {
	domain.CellResult
	Question   int  `json:"question,omitempty"`
	HiddenTest bool `json:"hidden_test,omitempty"`
}

func cmdSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "submit", "FILE.ipynb", "Upload a notebook for an exercise, wait for its grade and print the per-cell verdicts.\nExit 0 on full marks, 1 otherwise. Sending the same file for the same exercise again\nreturns the first submission instead of a duplicate (see --idempotency-key).",
		envServer, envToken)
	saved := readConfig()
	server := fs.String("server", envOr("NPUGRADE_SERVER", cmp.Or(saved.Server, "http://127.0.0.1:8080")), "server URL (default: NPUGRADE_SERVER, else the one npugrade login saved)")
	token := fs.String("token", os.Getenv("NPUGRADE_TOKEN"), "API token (precedence: --token, NPUGRADE_TOKEN, then the token npugrade login saved for this server)")
	exerciseID := fs.String("exercise", "", "exercise id, e.g. ch1 (required)")
	wait := fs.DurationMin("wait", 10*time.Minute, time.Second, "how long to wait for the grade")
	key := fs.String("idempotency-key", "", "resend-safe key (default: derived from the exercise and the file's content; pass a new one to submit the same file again)")
	langFlag := fs.lang
	pos, code, ok := fs.parse(args, 1, 1, stdout, stderr)
	if !ok {
		return code
	}
	w := fs.words()
	file := pos[0]
	var missing []string
	if *exerciseID == "" {
		missing = append(missing, w.T("--exercise is required"))
	}
	base, err := serverURL(w, *server)
	if err != nil {
		missing = append(missing, err.Error())
	}
	// The saved token only for the server it was issued by: another
	// server must not see it.
	if savedBase, serr := serverURL(w, saved.Server); *token == "" && serr == nil && err == nil && savedBase == base {
		*token = saved.Token
	}
	if *token == "" {
		missing = append(missing, w.T("--token (or NPUGRADE_TOKEN, or npugrade login) is required"))
	}
	if len(missing) > 0 {
		return fs.usageError(stderr, missing...)
	}
	say := cliWords(*langFlag)
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", w.F("cannot read the notebook: %s", sysProblem(w, err)))
		return exitError
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", *exerciseID)
	fw, _ := mw.CreateFormFile("notebook", filepath.Base(file))
	fw.Write(data)
	mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/submissions", &body)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", err)
		return exitError
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Accept-Language", *langFlag)
	if *key == "" {
		*key = submitKey(*exerciseID, data)
	}
	req.Header.Set("Idempotency-Key", *key)
	var sub submissionView
	resp, code := doJSON(req, http.StatusAccepted, &sub, w, stderr)
	if code != exitOK {
		return code
	}
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		fmt.Fprintf(stdout, say("replayed"), file, *exerciseID, sub.ID)
	} else {
		fmt.Fprintf(stdout, say("submitted"), file, sub.ID)
	}

	poll := func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/submissions/"+url.PathEscape(sub.ID), nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+*token)
			req.Header.Set("Accept-Language", *langFlag)
		}
		return req, err
	}
	if code := awaitGrade(ctx, &sub, poll, *wait, say, w, stdout, stderr); code != exitOK {
		return code
	}
	fmt.Fprintf(stdout, "%s  %s\n\n", time.Now().Format("15:04:05"), say("st."+sub.Status))
	return printVerdicts(stdout, sub, say)
}

// awaitGrade polls the submission (the request poll builds) until it is
// no longer queued or running, printing each status it passes through,
// for at most wait.
func awaitGrade(ctx context.Context, sub *submissionView, poll func(context.Context) (*http.Request, error), wait time.Duration,
	say func(string) string, w words, stdout, stderr io.Writer) int {
	deadline := time.Now().Add(wait)
	last := ""
	for sub.Status == domain.StatusQueued || sub.Status == domain.StatusRunning {
		if sub.Status != last {
			fmt.Fprintf(stdout, "%s  %s\n", time.Now().Format("15:04:05"), say("st."+sub.Status))
			last = sub.Status
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "npugrade submit: "+say("still"), say("st."+sub.Status), wait, sub.ID)
			return exitError
		}
		select {
		case <-ctx.Done():
			return exitError
		case <-time.After(500 * time.Millisecond):
		}
		req, err := poll(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade submit:", err)
			return exitError
		}
		if _, code := doJSON(req, http.StatusOK, sub, w, stderr); code != exitOK {
			return code
		}
	}
	return exitOK
}

// printVerdicts prints a graded submission's cells, named as the notebook
// numbers its questions, and its score; exit 0 on full marks.
func printVerdicts(stdout io.Writer, sub submissionView, say func(string) string) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, say("header"))
	for _, c := range sub.Cells {
		pts := fmt.Sprintf("%g/%g", c.Points, c.MaxPoints)
		if !c.Counted {
			pts = "-"
		}
		name := c.CellID
		if c.Question > 0 {
			name = fmt.Sprintf(say("question"), c.Question)
			if c.HiddenTest {
				name += say("hidden")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, say("v."+c.Verdict), pts, oneLine(c.Message))
	}
	tw.Flush()
	fmt.Fprintf(stdout, say("score"), sub.Score, sub.MaxScore, say("st."+sub.Message))
	if sub.Status == domain.StatusGraded && sub.Score == sub.MaxScore && sub.MaxScore > 0 {
		return exitOK
	}
	return exitMismatch
}

// submitKey is the default Idempotency-Key: the same exercise and notebook
// bytes give the same key, so a resend after a lost reply is not a second attempt.
func submitKey(exerciseID string, notebook []byte) string {
	h := sha256.New()
	h.Write([]byte(exerciseID))
	h.Write([]byte{0})
	h.Write(notebook)
	return "npugrade-submit-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// doJSON sends req and decodes the reply into out; a problem+json reply
// is printed as the server worded it (in the Accept-Language asked for).
func doJSON(req *http.Request, want int, out any, w words, stderr io.Writer) (*http.Response, int) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", w.F("cannot reach the server %s: %s", req.URL.Host, sysProblem(w, err)))
		return nil, exitError
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != want {
		e := problem.Decode(resp.StatusCode, b)
		fmt.Fprintf(stderr, "npugrade submit: %d %s: %s\n", resp.StatusCode, w.T(http.StatusText(resp.StatusCode)), e.Message)
		for _, q := range e.Problems {
			fmt.Fprintf(stderr, "  - %s\n", q)
		}
		return resp, exitError
	}
	if err := json.Unmarshal(b, out); err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", w.F("the server's reply is not the JSON expected: %v", err))
		return resp, exitError
	}
	return resp, exitOK
}

// messageColumns is how wide a verdict's message may be in submit's
// table, in terminal columns.
const messageColumns = 100

// oneLine is a cell's message on one line of at most messageColumns
// columns: cut between characters (never inside one: a Chinese message
// used to end in an invalid byte, shown as �), counting East Asian wide
// characters as the two columns a terminal gives them, with "…" when
// something was cut.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if displayColumns(s) <= messageColumns {
		return s
	}
	cols := 0
	for i, r := range s {
		// One column is left for the ellipsis.
		if cols += runeColumns(r); cols > messageColumns-1 {
			return s[:i] + "…"
		}
	}
	return s
}

// displayColumns is how many terminal columns s takes.
func displayColumns(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

// runeColumns is the columns a terminal gives r: 2 for East Asian wide
// and fullwidth characters, 0 for combining marks and other zero-width
// ones, else 1.
func runeColumns(r rune) int {
	switch {
	case r == utf8.RuneError:
		return 1
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
