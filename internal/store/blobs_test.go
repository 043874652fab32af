package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLargeBlobsRoundTrip: a 135 KB upload and its rebuilt notebook come
// back byte for byte on every dialect; on Postgres built with lz4 they are
// stored lz4-compressed (migration 00020) and smaller than they are.
func TestLargeBlobsRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := learner(t, db)
		upload := []byte(`{"cells":[{"source":"` + string(bytes.Repeat([]byte("填充 padding text, 135 KB of it. "), 4000)) + `"}]}`)
		rebuilt := append([]byte(`{"rebuilt":true,`), upload[1:]...)
		ns := store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v1", Upload: upload, Rebuilt: rebuilt,
			Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1)}
		if _, _, err := db.CreateSubmission(ctx, ns); err != nil {
			t.Fatal(err)
		}
		for _, want := range [][]byte{upload, rebuilt} {
			got, err := db.Blob(ctx, store.SHA256(want))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("blob of %d bytes came back as %d bytes, %v", len(want), len(got), err)
			}
		}
		if db.Dialect != "postgres" {
			return
		}
		// Whether this Postgres has lz4: a column may be declared with it.
		lz4 := db.RawExec(ctx, "CREATE TEMP TABLE lz4_probe (b BYTEA COMPRESSION lz4)") == nil
		var methods []string
		if err := db.RawScan(ctx, &methods, "SELECT DISTINCT coalesce(pg_column_compression(data), 'none') FROM blobs WHERE sha256 IN (?, ?)",
			store.SHA256(upload), store.SHA256(rebuilt)); err != nil {
			t.Fatal(err)
		}
		want := "pglz"
		if lz4 {
			want = "lz4"
		}
		if fmt.Sprint(methods) != "["+want+"]" {
			t.Errorf("blobs compressed with %v, want %s (lz4 supported: %v)", methods, want, lz4)
		}
		var stored int64
		if err := db.RawScan(ctx, &stored, "SELECT pg_column_size(data) FROM blobs WHERE sha256 = ?", store.SHA256(upload)); err != nil {
			t.Fatal(err)
		}
		if stored >= int64(len(upload))/4 {
			t.Errorf("a %d-byte repetitive upload takes %d bytes stored", len(upload), stored)
		}
	})
}
