package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// userImport runs `npugrade user import ROSTER.csv`: the roster is
// checked whole (every problem on stderr, exit 2, nothing imported), then
// imported in one transaction; the new users' tokens go to stdout or
// --tokens once.
func userImport(ctx context.Context, db *store.DB, path, tokensFile, cohort string, w words, stdout, stderr io.Writer) int {
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user import:", w.F("cannot read the roster: %s", sysProblem(w, err)))
			return exitError
		}
		defer f.Close()
		in = f
	}
	// Open the tokens file first: a roster must not be imported when its
	// tokens have nowhere to go.
	out := stdout
	if tokensFile != "" {
		f, err := os.OpenFile(tokensFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user import: --tokens:", sysProblem(w, err))
			return exitError
		}
		defer f.Close()
		out = f
	}
	res, err := (&accounts.Rosters{DB: db}).ImportInto(ctx, domain.User{}, in, cohort)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade user import:", dbProblem(w, err))
		for _, p := range domain.ErrorProblems(err) {
			fmt.Fprintln(stderr, "  "+w.Problem(p))
		}
		if domain.ErrorCode(err) == domain.EINTERNAL {
			fmt.Fprintln(stderr, "  ", err)
		}
		if tokensFile != "" {
			_ = os.Remove(tokensFile) // created empty above, nothing written
		}
		return exitError
	}
	if err := accounts.WriteTokens(out, res.Created); err != nil {
		fmt.Fprintln(stderr, "npugrade user import:", w.F("writing the tokens: %s", sysProblem(w, err)))
		return exitError
	}
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
			fmt.Fprintln(stderr, "npugrade user import:", w.F("writing the tokens: %s", sysProblem(w, err)))
			return exitError
		}
	}
	total := len(res.Created) + len(res.Updated) + res.Unchanged
	fmt.Fprint(stderr, w.F("imported %s: %d created, %d updated, %d unchanged\n", w.N("n.users", total), len(res.Created), len(res.Updated), res.Unchanged))
	return exitOK
}
