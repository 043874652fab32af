package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// limitedServer is one server process over dbURL whose learners may
// upload `count` notebooks per hour, refused ones included.
func limitedServer(t *testing.T, dbURL string, count int) *httptest.Server {
	t.Helper()
	db := storetest.OpenURL(t, dbURL)
	cat := projectCatalog(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := jobs.New(db, log)
	srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log, MaxUpload: 1 << 20,
		UploadLimit: store.UploadWindow{Count: count, Per: time.Hour}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func postUpload(t *testing.T, url, token string, nb []byte, key string) (int, http.Header) {
	t.Helper()
	body, ct := multipartBody(nb)
	req, _ := http.NewRequest("POST", url+"/api/v1/submissions", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestUploadLimitCountsRefusedUploadsAcrossServers: refused uploads (a
// broken notebook, one over the size limit) count against a learner's
// limit, and the limit holds exactly for 20 concurrent uploads spread
// over two servers sharing one database.
func TestUploadLimitCountsRefusedUploadsAcrossServers(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			a, b := limitedServer(t, dbURL, 5), limitedServer(t, dbURL, 5)
			db, err := store.Open(context.Background(), dbURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, ada, _ := db.CreateUser(context.Background(), "ada", domain.RoleLearner)
			_, bob, _ := db.CreateUser(context.Background(), "bob", domain.RoleLearner)
			starter := starterOf(t, "ch1")

			if st, _ := postUpload(t, a.URL, ada, []byte(`{"cells": "no"}`), ""); st != http.StatusUnprocessableEntity {
				t.Fatalf("broken notebook: %d", st)
			}
			if st, _ := postUpload(t, b.URL, ada, bytes.Repeat([]byte("x"), 2<<20), ""); st != http.StatusRequestEntityTooLarge {
				t.Fatalf("2 MiB upload: %d", st)
			}
			for i := 0; i < 3; i++ {
				if st, _ := postUpload(t, a.URL, ada, starter, fmt.Sprint("k", i)); st != http.StatusAccepted {
					t.Fatalf("upload %d: %d", i+3, st)
				}
			}
			// The replay of an accepted upload is not a new attempt.
			if st, _ := postUpload(t, b.URL, ada, starter, "k0"); st != http.StatusAccepted {
				t.Fatalf("replay: %d", st)
			}
			st, hdr := postUpload(t, b.URL, ada, starter, "k9")
			if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); st != http.StatusTooManyRequests || ra < 3000 {
				t.Fatalf("sixth upload after two refused and three accepted: %d, Retry-After %q", st, hdr.Get("Retry-After"))
			}

			var mu sync.Mutex
			codes := map[int]int{}
			var wg sync.WaitGroup
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					url := a.URL
					if i%2 == 1 {
						url = b.URL
					}
					st, _ := postUpload(t, url, bob, starter, fmt.Sprint("c", i))
					mu.Lock()
					codes[st]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			if codes[http.StatusAccepted] != 5 || codes[http.StatusTooManyRequests] != 15 {
				t.Errorf("20 concurrent uploads over two servers with a limit of 5: %v", codes)
			}
		})
	}
}
