// Package sso signs people in through the services their course already
// signs them in with: a JupyterHub (as an OAuth provider for the pages,
// and by exchanging a single-user server's API token for an npugrade
// token in the notebook) and a generic OpenID Connect provider. Every
// call to an outside server has a timeout and a bounded body; users are
// found by the outside identity (store.ExternalUser), never by a login
// name alone.
package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// maxBody bounds what is read of an outside server's answer: a user
// model or a token is a few kilobytes.
const maxBody = 1 << 20

// DefaultTimeout is how long one call to an outside server may take.
const DefaultTimeout = 10 * time.Second

// Hub is a JupyterHub npugrade trusts (serve --jupyterhub-url).
type Hub struct {
	// URL is the hub's public base URL, without /hub.
	URL string
	// ClientID and ClientSecret are npugrade's OAuth client at the hub
	// (a service's oauth_client_id and api_token).
	ClientID, ClientSecret string
	// InstructorGroup names the hub group whose members are instructors
	// ("" : instructors).
	InstructorGroup string
	// HTTP calls the hub (nil: a client with DefaultTimeout).
	HTTP *http.Client
}

// HubUser is the part of the hub's user model npugrade reads.
type HubUser struct {
	Name   string   `json:"name"`
	Admin  bool     `json:"admin"`
	Groups []string `json:"groups"`
}

// Issuer names the hub in identity links.
func (h *Hub) Issuer() string { return "jupyterhub:" + strings.TrimRight(h.URL, "/") }

// Role is the npugrade role of a hub user: an instructor when a hub admin
// or a member of the instructor group, else a learner; never an admin.
func (h *Hub) Role(u HubUser) domain.Role {
	g := h.InstructorGroup
	if g == "" {
		g = "instructors"
	}
	if u.Admin || slices.Contains(u.Groups, g) {
		return domain.RoleInstructor
	}
	return domain.RoleLearner
}

func (h *Hub) client() *http.Client {
	if h.HTTP != nil {
		return h.HTTP
	}
	return boundedClient()
}

// api is the hub's REST API base.
func (h *Hub) api() string { return strings.TrimRight(h.URL, "/") + "/hub/api" }

// User reads the hub user a token belongs to. authorization is the whole
// header value ("token T" for an API token, "Bearer T" for an OAuth
// access token). A token the hub refuses is EUNAUTHORIZED; a hub that
// cannot be reached or answers an error is EUNAVAILABLE.
func (h *Hub) User(ctx context.Context, authorization string) (HubUser, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.api()+"/user", nil)
	if err != nil {
		return HubUser{}, fmt.Errorf("jupyterhub user request: %w", err)
	}
	req.Header.Set("Authorization", authorization)
	req.Header.Set("Accept", "application/json")
	resp, err := h.client().Do(req)
	if err != nil {
		return HubUser{}, domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s cannot be reached: %s", h.URL, reason(err))
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	switch {
	case err != nil:
		return HubUser{}, domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s: reading its answer: %s", h.URL, reason(err))
	case len(body) > maxBody:
		return HubUser{}, domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s answered more than %d bytes", h.URL, maxBody)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return HubUser{}, domain.Errorf(domain.EUNAUTHORIZED, "JupyterHub does not accept this token")
	case resp.StatusCode != http.StatusOK:
		return HubUser{}, domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s answered %s", h.URL, resp.Status)
	}
	var u HubUser
	if err := json.Unmarshal(body, &u); err != nil || u.Name == "" {
		return HubUser{}, domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s answered no user name", h.URL)
	}
	return u, nil
}

// reason is a network error without the request (its URL may carry a
// code or a token in the query).
func reason(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// boundedClient calls an outside server with DefaultTimeout and reads
// at most maxBody of each answer (go-oidc reads discovery and keys whole).
func boundedClient() *http.Client {
	return &http.Client{Timeout: DefaultTimeout, Transport: boundedTransport{http.DefaultTransport}}
}

type boundedTransport struct{ next http.RoundTripper }

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		resp.Body = &limitedBody{rc: resp.Body, left: maxBody}
	}
	return resp, err
}

// limitedBody fails a read past its limit, so an oversized answer is an
// error, not a silently cut one.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("the answer is larger than %d bytes", maxBody)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
