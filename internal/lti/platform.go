package lti

import (
	"context"
	"net"
	"net/url"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// PlatformStore keeps registrations (store.DB).
type PlatformStore interface {
	AddLTIPlatform(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error)
	UpdateLTIPlatform(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error)
	LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error)
	LTIPlatforms(ctx context.Context) ([]domain.LTIPlatform, error)
}

// Platforms registers and lists platforms (the admin CLI and page).
type Platforms struct{ DB PlatformStore }

// Add checks and registers p: issuer, client id, at least one
// deployment id, and https URLs (http only on a loopback host, for
// tests and a platform on the same machine).
func (s *Platforms) Add(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error) {
	p, err := check(p)
	if err != nil {
		return domain.LTIPlatform{}, err
	}
	return s.DB.AddLTIPlatform(ctx, p)
}

// Set changes registration id: change edits a copy of it (deployment
// ids, URLs, audience), checked as Add checks a new one.
func (s *Platforms) Set(ctx context.Context, id int64, change func(*domain.LTIPlatform)) (domain.LTIPlatform, error) {
	p, err := s.DB.LTIPlatformByID(ctx, id)
	if err != nil {
		return domain.LTIPlatform{}, err
	}
	change(&p)
	if p, err = check(p); err != nil {
		return domain.LTIPlatform{}, err
	}
	return s.DB.UpdateLTIPlatform(ctx, p)
}

// check trims p and lists every problem of it at once.
func check(p domain.LTIPlatform) (domain.LTIPlatform, error) {
	p.Issuer, p.ClientID = strings.TrimSpace(p.Issuer), strings.TrimSpace(p.ClientID)
	var problems []string
	if p.Issuer == "" {
		problems = append(problems, "issuer: empty")
	}
	if p.ClientID == "" {
		problems = append(problems, "client id: empty")
	}
	var deps []string
	for _, d := range p.DeploymentIDs {
		if d = strings.TrimSpace(d); d != "" {
			deps = append(deps, d)
		}
	}
	if p.DeploymentIDs = deps; len(deps) == 0 {
		problems = append(problems, "deployment ids: none (the platform shows its deployment id when the tool is added)")
	}
	for _, u := range [][2]string{{"auth login URL", p.AuthLoginURL}, {"token URL", p.TokenURL}, {"JWKS URL", p.JWKSURL}} {
		if !SecureURL(u[1]) {
			problems = append(problems, u[0]+": want an https URL (http only on a loopback host), got "+quote(u[1]))
		}
	}
	if p.Audience != "" && strings.ContainsAny(p.Audience, " \t\r\n") {
		problems = append(problems, "audience: no spaces")
	}
	if len(problems) > 0 {
		return domain.LTIPlatform{}, &domain.Error{Code: domain.EINVALID, Message: "the platform registration is not valid", Problems: problems}
	}
	if p.Name == "" {
		p.Name = p.Issuer
	}
	return p, nil
}

// List returns the registered platforms.
func (s *Platforms) List(ctx context.Context) ([]domain.LTIPlatform, error) {
	return s.DB.LTIPlatforms(ctx)
}

// SecureURL is an https URL, or http to a loopback host.
func SecureURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return Loopback(u.Hostname())
	}
	return false
}

// Loopback reports whether host is localhost or a loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quote(s string) string { return "\"" + s + "\"" }
