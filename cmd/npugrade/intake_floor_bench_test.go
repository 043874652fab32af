package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
)

// intakeFloor is the floor under intake on this host: an HTTP server
// that does only what no intake storing these rows can skip — read the
// upload off the socket, hash it and a rebuilt notebook of the server's
// size, and run the store's very intake statement over the same pgx path
// — with the same client, clients and notebooks as intakeServer. No
// parse, rebuild, authentication, limits or JSON: its rate against
// pgbench is the most intake's ratio could be here, so how far the server
// is from the floor (not from pgbench) is its own overhead.
func intakeFloor(b *testing.B, dbURL string, clients int, nb, marker []byte, n int) intakeRun {
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatalf("open the store: %v", err)
	}
	defer db.Close()
	// serve's GC settings, as intakeServer runs it with.
	limit, err := parseMemoryLimit(defaultMemoryLimit)
	if err != nil {
		b.Fatal(err)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	defer debug.SetGCPercent(debug.SetGCPercent(defaultGCPercent))
	ns := floorSubmission(b, dbURL)
	q := jobs.New(db, slog.New(slog.DiscardHandler))
	var seq atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upload, err := floorUpload(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s := ns
		s.Upload = upload
		s.Job = q.GradeJob(ns.ExerciseID, ns.Job.Requires, ns.Job.MaxAttempts)
		// Distinct, as every rebuilt notebook is (each carries its seed).
		s.Rebuilt = strconv.AppendInt(append(make([]byte, 0, len(ns.Rebuilt)+20), ns.Rebuilt...), seq.Add(1), 10)
		sub, _, err := db.CreateSubmission(r.Context(), s)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q}`, sub.ID)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	// Past the server's numbers: its uploads are in the blobs table already.
	return postUploads(b, dbURL, "http://"+ln.Addr().String(), make([]string, clients), nb, marker, n, 10*n)
}

// floorUpload is the notebook part of the form, read as the server reads
// it: the body into one buffer of its length, the part cut out of it.
func floorUpload(r *http.Request) ([]byte, error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if r.ContentLength <= 0 {
		return nil, fmt.Errorf("no Content-Length")
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return nil, err
	}
	at := bytes.Index(body, []byte(`name="notebook"`))
	start := bytes.Index(body[max(at, 0):], []byte("\r\n\r\n"))
	end := bytes.LastIndex(body, []byte("\r\n--"+params["boundary"]))
	if at < 0 || start < 0 || end < at+start {
		return nil, fmt.Errorf("no notebook part")
	}
	return body[at+start+4 : end], nil
}

// floorSubmission is what the server stored for its last upload, less the
// bytes: the same user, exercise, findings, requirement and attempt rows.
func floorSubmission(b *testing.B, dbURL string) store.NewSubmission {
	sqlDB := sqlOpen(b, "pgx", dbURL)
	defer sqlDB.Close()
	var ns store.NewSubmission
	var requires string
	var attempts int
	err := sqlDB.QueryRow(`SELECT s.user_id, s.exercise_id, s.exercise_version, s.integrity, j.requires, j.max_attempts, p.data,
		(SELECT count(*) FROM upload_attempts)
		FROM submissions s JOIN jobs j ON j.submission_id = s.id JOIN blobs p ON p.sha256 = j.payload_sha256
		ORDER BY s.created_at DESC LIMIT 1`).Scan(&ns.UserID, &ns.ExerciseID, &ns.ExerciseVersion, &ns.Integrity, &requires, &ns.Job.MaxAttempts, &ns.Rebuilt, &attempts)
	if err != nil {
		b.Fatalf("read what the server stored: %v", err)
	}
	if requires != "" {
		if err := json.Unmarshal([]byte(requires), &ns.Job.Requires); err != nil {
			b.Fatalf("the stored requirement %q: %v", requires, err)
		}
	}
	ns.RecordAttempt = attempts > 0
	return ns
}

// postUploads posts n distinct notebooks (numbered from first+1) over
// len(tokens) clients, one token each, and measures them.
func postUploads(b *testing.B, dbURL, url string, tokens []string, nb, marker []byte, n, first int) intakeRun {
	clients := len(tokens)
	var pg *backendCPU
	blobs0 := blobsSize(b, dbURL)
	if strings.HasPrefix(dbURL, "postgres") {
		pg = watchBackends(dbURL)
	}
	cpu0, gc0 := selfCPU(), gcCPU()
	form := newUploadBody(nb, marker)
	forms := make([]uploadBody, clients)
	for c := range forms {
		forms[c] = form.forClient()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, WriteBufferSize: len(form.form) + 4096},
		Timeout: time.Minute}
	var failed atomic.Int64
	all, el := clientLoop(clients, n, func(c int, i int64) bool {
		// Each upload is distinct, as learners' are: no blob is
		// deduplicated away.
		if code := forms[c].post(client, url, tokens[c], fmt.Sprintf("%-*d", form.marker, int64(first)+i)); code != http.StatusAccepted {
			failed.Add(1)
			return false
		}
		return true
	})
	r := intakeRun{selfCPU: (selfCPU() - cpu0) / time.Duration(n), gcCPU: (gcCPU() - gc0) / time.Duration(n),
		blobBytes: (blobsSize(b, dbURL) - blobs0) / int64(n)}
	if pg != nil {
		r.pgCPU = pg.Stop() / time.Duration(n)
	}
	if f := failed.Load(); f > 0 {
		b.Errorf("%d of %d uploads failed", f, n)
	}
	r.n, r.rate, r.p50, r.p99 = len(all), float64(len(all))/el.Seconds(), percentile(all, 0.5), percentile(all, 0.99)
	return r
}

// clientLoop runs one(c, i) for i from 1 to n over clients goroutines (c
// is the goroutine's number) and returns the latencies of the calls that
// returned true (the others failed), and how long all took.
func clientLoop(clients, n int, one func(c int, i int64) bool) ([]time.Duration, time.Duration) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				t0 := time.Now()
				if one(c, i) {
					lat[c] = append(lat[c], time.Since(t0))
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, el
}
