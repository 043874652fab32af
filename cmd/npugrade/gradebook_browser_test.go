package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWebGradebookFitsPhoneAndDesktop: at 1280 px and at 390 px (a phone)
// the gradebook page never scrolls sideways (its table scrolls inside
// its wrapper instead), shows one row per learner with a column per
// exercise, 50 learners a page, and the pager's next link leads on.
func TestWebGradebookFitsPhoneAndDesktop(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t, d)
			teacher := addUser(t, dbURL, "teacher", "instructor")
			db, err := store.Open(ctx, dbURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 60 {
				if _, _, err := db.CreateUser(ctx, fmt.Sprintf("2027%04d", i), domain.RoleLearner); err != nil {
					t.Fatal(err)
				}
			}
			// A long roster name and sections: the widest row there is.
			if err := db.RawExec(ctx, "UPDATE users SET full_name = 'Maximiliana Alexandrovna Konstantinopolskaya-Wright', section = 'Section Red' WHERE name = '20270001'"); err != nil {
				t.Fatal(err)
			}
			db.Close()
			cells := []domain.CellResult{{CellID: "q1", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true}}
			for _, ex := range []string{"ch1", "ch2", "ch3"} {
				seedGraded(t, dbURL, "20270001", ex, []byte("{}"), store.Grade{Score: 1, RawScore: 1, MaxScore: 1, Profile: "cpu", Cells: cells})
			}
			s := startServer(t, dbURL, "--local-runner", "0")
			defer s.stop()

			b := newTab(t, s.url)
			b.signIn("/dashboard/gradebook", teacher)
			exercises := eval[int](b, `document.querySelectorAll('#gradebook thead th.gb-ex').length`)
			if exercises < 3 {
				t.Fatalf("%d exercise columns", exercises)
			}
			for _, w := range []struct {
				name          string
				width, height int64
			}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
				b.do("viewport "+w.name, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(b.base+"/dashboard/gradebook?lang=en"),
					chromedp.WaitVisible(chromedp.CSS("#gradebook")))
				b.shot("gradebook-" + w.name)
				if sw, iw := eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `window.innerWidth`); sw > iw || iw != int(w.width) {
					t.Errorf("%s: the page scrolls sideways: scrollWidth %d > innerWidth %d", w.name, sw, iw)
				}
				rows := eval[int](b, `document.querySelectorAll('#gradebook tbody tr').length`)
				perRow := eval[[]int](b, `[...document.querySelectorAll('#gradebook tbody tr')].map(r => r.querySelectorAll('td.gb-cell').length)`)
				if rows != 50 || len(perRow) != 50 || perRow[0] != exercises || perRow[49] != exercises {
					t.Errorf("%s: %d rows (want 50, one per learner), cells per row %v (want %d)", w.name, rows, perRow, exercises)
				}
				if got := b.text("#gb-range"); got != "1–50 of 60 learners" {
					t.Errorf("%s: range %q", w.name, got)
				}
				cell := b.text(`#gradebook tbody tr:nth-child(2) td.gb-cell[data-exercise="ch1"]`)
				if !strings.Contains(cell, "1 / 1") {
					t.Errorf("%s: the second learner's ch1 cell %q", w.name, cell)
				}
				if w.name == "phone" {
					// The table is wider than the phone: its wrapper scrolls.
					if sw, cw := eval[int](b, `document.querySelector('.table-scroll').scrollWidth`), eval[int](b, `document.querySelector('.table-scroll').clientWidth`); sw <= cw {
						t.Errorf("phone: the table (%d px) fits in %d px; the test wants the wrapper to be what scrolls", sw, cw)
					}
				}
			}
			b.do("next page", chromedp.Click(chromedp.CSS("#gb-next")), chromedp.WaitVisible(chromedp.CSS(`#gb-prev`)))
			if loc, rows := b.location(), eval[int](b, `document.querySelectorAll('#gradebook tbody tr').length`); !strings.Contains(loc, "page=2") || rows != 10 ||
				b.text("#gb-range") != "51–60 of 60 learners" {
				t.Errorf("page 2: %s, %d rows, range %q", loc, rows, b.text("#gb-range"))
			}
			b.shot("gradebook-phone-page-2")
		})
	}
}
