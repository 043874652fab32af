package web_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestGradebookCSVFailingMidwayIsAborted: when the database fails after
// the 200 and the first thousand rows are sent, the client must see an
// error (the response is aborted), never a clean but short file. The
// failure is a real one: the last learner's score is not a number.
func TestGradebookCSVFailingMidwayIsAborted(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			seed(t, e.db, 400, []string{"ch1"}, 1)
			if d == "postgres" {
				if err := e.db.RawExec(context.Background(), "ALTER TABLE submissions ALTER COLUMN score TYPE TEXT"); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.db.RawExec(context.Background(), "UPDATE submissions SET score = 'not a number' WHERE user_id = (SELECT MAX(id) FROM users WHERE role = 'learner')"); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/gradebook.csv", nil)
			req.Header.Set("Authorization", "Bearer "+teacher)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			body, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Fatalf("the export ended cleanly after %d bytes although the database failed mid-way", len(body))
			}
			if len(body) < 1000*len("learner-000000,ch1") {
				t.Errorf("only %d bytes arrived before the abort: the failure was not mid-way", len(body))
			}
		})
	}
}
