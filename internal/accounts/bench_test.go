package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkImportRoster500 imports a new class of 500 (one transaction,
// batched inserts, a token each) on each database; ns/op is one import.
func BenchmarkImportRoster500(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, d)
			svc := &accounts.Rosters{DB: db}
			rosters := make([]string, b.N)
			for i := range rosters {
				var sb strings.Builder
				sb.WriteString("name,student_number,section,role\n")
				for j := range 500 {
					fmt.Fprintf(&sb, "Learner %d,b%d-%04d,S%d,learner\n", j, i, j, j%8)
				}
				rosters[i] = sb.String()
			}
			b.ResetTimer()
			for i := range b.N {
				res, err := svc.Import(ctx, domain.User{Name: "bench"}, strings.NewReader(rosters[i]))
				if err != nil || len(res.Created) != 500 {
					b.Fatalf("import %d: %d created, %v", i, len(res.Created), err)
				}
			}
		})
	}
}
