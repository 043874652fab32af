package httpapi

import (
	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/reference"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/similarity"
	"github.com/npugrade/npugrade/internal/sso"
)

// Services are the use cases the handlers call. The composition root
// (cmd/npugrade/compose) builds them once; the server builds none.
type Services struct {
	Policy     *policy.Service
	Releases   *policy.FeedbackReleases
	Extensions *grade.Extensions
	Appeals    *grade.Appeals
	Manual     *grade.Manual
	Regrades   *regrade.Service
	References *reference.Reviews
	Similarity *similarity.Service
	Rosters    *accounts.Rosters
	Cohorts    *accounts.Cohorts
	// Devices is device-code sign-in and a user's own tokens.
	Devices *accounts.Devices
	// JupyterHub exchanges hub tokens for npugrade tokens (nil: no hub).
	JupyterHub *sso.Exchange
}
