package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/npugrade/npugrade/internal/grading"
)

type submissionView struct {
	ID       string               `json:"id"`
	Exercise string               `json:"exercise"`
	Status   string               `json:"status"`
	Score    float64              `json:"score"`
	MaxScore float64              `json:"max_score"`
	Message  string               `json:"message"`
	Cells    []grading.CellResult `json:"cells"`
}

type problemView struct {
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Problems []string `json:"problems"`
}

func cmdSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", envOr("NPUGRADE_SERVER", "http://127.0.0.1:8080"), "server URL")
	token := fs.String("token", os.Getenv("NPUGRADE_TOKEN"), "API token (or NPUGRADE_TOKEN)")
	exerciseID := fs.String("exercise", "", "exercise id, e.g. ch1")
	wait := fs.Duration("wait", 10*time.Minute, "how long to wait for the grade")
	key := fs.String("idempotency-key", "", "resend-safe key (default: derived from the file's content)")
	// Let the notebook path come before or after the flags.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" || *exerciseID == "" || *token == "" {
		fmt.Fprintln(stderr, "usage: npugrade submit --server URL --token TOKEN --exercise ID FILE.ipynb")
		return exitError
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", err)
		return exitError
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", *exerciseID)
	fw, _ := mw.CreateFormFile("notebook", filepath.Base(file))
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*server, "/")+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+*token)
	if *key != "" {
		req.Header.Set("Idempotency-Key", *key)
	}
	var sub submissionView
	if code := doJSON(req, http.StatusAccepted, &sub, stderr); code != exitOK {
		return code
	}
	fmt.Fprintf(stdout, "submitted %s as %s\n", file, sub.ID)

	deadline := time.Now().Add(*wait)
	last := ""
	for sub.Status == grading.StatusQueued || sub.Status == grading.StatusRunning {
		if sub.Status != last {
			fmt.Fprintf(stdout, "%s  %s\n", time.Now().Format("15:04:05"), sub.Status)
			last = sub.Status
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "npugrade submit: still %s after %s; check later with GET /api/v1/submissions/%s\n", sub.Status, *wait, sub.ID)
			return exitError
		}
		select {
		case <-ctx.Done():
			return exitError
		case <-time.After(500 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*server, "/")+"/api/v1/submissions/"+sub.ID, nil)
		req.Header.Set("Authorization", "Bearer "+*token)
		if code := doJSON(req, http.StatusOK, &sub, stderr); code != exitOK {
			return code
		}
	}
	fmt.Fprintf(stdout, "%s  %s\n\n", time.Now().Format("15:04:05"), sub.Status)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tVERDICT\tPOINTS\tMESSAGE")
	for _, c := range sub.Cells {
		pts := fmt.Sprintf("%g/%g", c.Points, c.MaxPoints)
		if !c.Counted {
			pts = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.CellID, c.Verdict, pts, oneLine(c.Message))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nscore: %g / %g  (%s)\n", sub.Score, sub.MaxScore, sub.Message)
	if sub.Status == grading.StatusGraded && sub.Score == sub.MaxScore && sub.MaxScore > 0 {
		return exitOK
	}
	return exitMismatch
}

func doJSON(req *http.Request, want int, out any, stderr io.Writer) int {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade submit:", err)
		return exitError
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != want {
		var p problemView
		if json.Unmarshal(b, &p) == nil && p.Title != "" {
			fmt.Fprintf(stderr, "npugrade submit: %d %s: %s\n", p.Status, p.Title, p.Detail)
			for _, q := range p.Problems {
				fmt.Fprintf(stderr, "  - %s\n", q)
			}
		} else {
			fmt.Fprintf(stderr, "npugrade submit: HTTP %d: %s\n", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return exitError
	}
	if err := json.Unmarshal(b, out); err != nil {
		fmt.Fprintln(stderr, "npugrade submit: bad response:", err)
		return exitError
	}
	return exitOK
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}
