package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRunnersPageShowsWarmSpares: the fleet page shows each runner's warm
// spares (ready / kept) and the memory they hold, in both languages; a
// runner without spares shows none.
func TestRunnersPageShowsWarmSpares(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			ctx := context.Background()
			admin := e.user(t, "root", domain.RoleAdmin)
			for _, reg := range []store.RunnerRegistration{
				{ID: "warm-1", Name: "warm", Slots: 2, Profile: "cpu", WarmSpares: fleet.WarmSpares{PerSlot: 2, Kept: 4, Ready: 3, MemoryBytes: 3 << 29}},
				{ID: "cold-1", Name: "cold", Slots: 1, Profile: "cpu"},
			} {
				if err := e.db.UpsertRunner(ctx, reg); err != nil {
					t.Fatal(err)
				}
			}
			c := client()
			e.signIn(t, c, admin)
			for lang, head := range map[string]string{"en": "Warm spares", "zh-CN": "预热内核"} {
				resp, body := do(t, c, "GET", e.srv.URL+"/admin/runners", nil, map[string]string{"Accept-Language": lang})
				if resp.StatusCode != 200 || !strings.Contains(body, head) {
					t.Fatalf("%s runners page: %d, want the %q column", lang, resp.StatusCode, head)
				}
				rows := strings.Split(body, "<tr>")
				for _, r := range rows {
					switch {
					case strings.Contains(r, "warm-1") && !strings.Contains(r, "3/4 · 1.5 GiB"):
						t.Errorf("%s: the warm runner's row lacks 3/4 · 1.5 GiB: %s", lang, r)
					case strings.Contains(r, "cold-1") && strings.Contains(r, "GiB"):
						t.Errorf("%s: the cold runner's row shows spare memory: %s", lang, r)
					}
				}
			}
		})
	}
}
