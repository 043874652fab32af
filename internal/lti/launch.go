package lti

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// Store is what the tool reads and writes (store.DB): platforms, login
// states and nonces, users, cohorts and contexts.
type Store interface {
	KeyStore
	LTIPlatformByIssuer(ctx context.Context, issuer, clientID string) (domain.LTIPlatform, error)
	LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error)
	PutLoginState(ctx context.Context, state, data string, ttl time.Duration) error
	TakeLoginState(ctx context.Context, state string) (string, error)
	UseLTINonce(ctx context.Context, nonce string, expires time.Time) error
	ExternalUserIn(ctx context.Context, issuer, subject, login string, role domain.Role, cohortID int64) (domain.User, error)
	LTIContext(ctx context.Context, platformID int64, contextID string) (domain.LTIContext, error)
	SaveLTIContext(ctx context.Context, c domain.LTIContext) (domain.LTIContext, error)
	SetLTILineItem(ctx context.Context, contextPK int64, exerciseID, url string) error
	EnsureCohort(ctx context.Context, slug, title string) (domain.Cohort, error)
	AddCohortMember(ctx context.Context, cohortID, userID int64, role domain.Role) error
}

// Tool is npugrade as an LTI tool at PublicURL.
type Tool struct {
	DB      Store
	Keys    *Keys
	Catalog *exercise.Catalog
	// PublicURL is npugrade's URL as the platform knows it (serve
	// --public-url): the redirect_uri of every launch and the URL of the
	// links Deep Linking places.
	PublicURL string
	// HTTP calls platforms (nil: a client with Timeout).
	HTTP *http.Client

	keys remoteKeys
}

func (t *Tool) client() *http.Client {
	if t.HTTP != nil {
		return t.HTTP
	}
	return &http.Client{Timeout: Timeout}
}

// LaunchURL is the redirect_uri of every launch (POST /lti/launch).
func (t *Tool) LaunchURL() string { return strings.TrimRight(t.PublicURL, "/") + "/lti/launch" }

// Error is a refused login or launch: Reason names the check that failed
// (state, signature, nonce, deployment, expired, audience, issuer,
// version, message, claims, unlinked, platform, unavailable, https,
// role), for the page to explain
// it in the reader's language, and Err says what was wrong.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func refuse(reason, format string, args ...any) error {
	return &Error{Reason: reason, Err: domain.Errorf(domain.EUNAUTHORIZED, format, args...)}
}

// Reason is the failed check of err ("" when err is not a refusal).
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// LoginRequest is a third-party login initiation (IMS Security
// Framework 5.1.1) as the platform sends it.
type LoginRequest struct {
	Issuer, LoginHint, TargetLinkURI, MessageHint, ClientID, DeploymentID string
}

// pendingLaunch is what the launch needs back of its login.
type pendingLaunch struct {
	Nonce      string `json:"n"`
	PlatformID int64  `json:"p"`
	Target     string `json:"t,omitempty"`
}

// loginTTL is how long the platform may take between login and launch.
const loginTTL = 10 * time.Minute

// Login answers a login initiation with the platform's authorization
// URL, keeping a fresh state and nonce (single use, in the database, so
// the launch may reach any server).
func (t *Tool) Login(ctx context.Context, r LoginRequest) (string, error) {
	if r.Issuer == "" || r.LoginHint == "" {
		return "", refuse("claims", "a login initiation needs iss and login_hint")
	}
	p, err := t.DB.LTIPlatformByIssuer(ctx, r.Issuer, r.ClientID)
	if err != nil {
		if c := domain.ErrorCode(err); c == domain.ENOTFOUND || c == domain.EINVALID {
			return "", &Error{Reason: "platform", Err: err}
		}
		return "", err
	}
	if r.DeploymentID != "" && !slices.Contains(p.DeploymentIDs, r.DeploymentID) {
		return "", refuse("deployment", "deployment %q is not registered for %s", r.DeploymentID, p.Issuer)
	}
	state, nonce := auth.RandomID(32), auth.RandomID(32)
	b, _ := json.Marshal(pendingLaunch{Nonce: nonce, PlatformID: p.ID, Target: r.TargetLinkURI})
	if err := t.DB.PutLoginState(ctx, state, string(b), loginTTL); err != nil {
		return "", err
	}
	u, err := url.Parse(p.AuthLoginURL)
	if err != nil {
		return "", fmt.Errorf("platform %s's login URL: %w", p.Issuer, err)
	}
	q := u.Query()
	for k, v := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": p.ClientID, "redirect_uri": t.LaunchURL(), "state": state, "nonce": nonce,
		"login_hint": r.LoginHint} {
		q.Set(k, v)
	}
	if r.MessageHint != "" {
		q.Set("lti_message_hint", r.MessageHint)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Launch is an accepted launch.
type Launch struct {
	User     domain.User
	Role     domain.Role // in the cohort
	Platform domain.LTIPlatform
	Context  domain.LTIContext
	// Message is MessageResourceLink or MessageDeepLinking.
	Message string
	// Exercise is the exercise a resource link opens ("" for none).
	Exercise string
	// DeepLink is a Deep Linking request's settings.
	DeepLink *DeepLinkSettings
	// DeploymentID is the launch's deployment (a Deep Linking response
	// names it).
	DeploymentID string
}

// Target is the page the launch opens.
func (l Launch) Target() string {
	switch {
	case l.Exercise != "":
		return "/exercises/" + url.PathEscape(l.Exercise)
	case l.Role == domain.RoleInstructor:
		return "/dashboard"
	}
	return "/exercises"
}

// clockSkew is how far apart the platform's clock and npugrade's may be.
const clockSkew = time.Minute

// Launch checks a launch's id_token (IMS Security Framework 5.1.3, LTI
// 1.3 Core 5): its signature verifies with the JWKS of the platform its
// iss and aud name; iss, aud (and azp when aud lists several), exp and
// iat, deployment, version and message type are right; its nonce was
// never used (recorded, so a replay is refused on any server) and is the
// one this server's state, single use, was issued with. It then signs
// the user in, links the context to a cohort and makes the user a member
// with the launch's role.
func (t *Tool) Launch(ctx context.Context, idToken, state string) (Launch, error) {
	if state == "" || idToken == "" {
		return Launch{}, refuse("state", "the launch has no id_token or state")
	}
	tok, err := jwt.ParseSigned(idToken, []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.PS256})
	if err != nil || len(tok.Headers) != 1 {
		return Launch{}, refuse("signature", "the id_token is not a signed JWT")
	}
	var head launchClaims
	if err := tok.UnsafeClaimsWithoutVerification(&head); err != nil {
		return Launch{}, refuse("claims", "the id_token's claims cannot be read")
	}
	clientID := head.AZP
	if clientID == "" && len(head.Audience) == 1 {
		clientID = head.Audience[0]
	}
	p, err := t.DB.LTIPlatformByIssuer(ctx, head.Issuer, clientID)
	if err != nil {
		if c := domain.ErrorCode(err); c == domain.ENOTFOUND || c == domain.EINVALID {
			return Launch{}, &Error{Reason: "audience", Err: domain.Errorf(domain.EUNAUTHORIZED, "%s", domain.ErrorMessage(err))}
		}
		return Launch{}, err
	}
	c, err := t.verify(ctx, p, tok)
	if err != nil {
		return Launch{}, err
	}
	data, err := t.DB.TakeLoginState(ctx, state)
	if err != nil {
		if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			return Launch{}, &Error{Reason: "state", Err: err}
		}
		return Launch{}, err
	}
	var pd pendingLaunch
	if err := json.Unmarshal([]byte(data), &pd); err != nil {
		return Launch{}, fmt.Errorf("read launch state: %w", err)
	}
	if pd.PlatformID != p.ID || pd.Nonce != c.Nonce {
		return Launch{}, refuse("nonce", "the id_token's nonce is not the one this launch's login was given")
	}
	return t.accept(ctx, p, c)
}

// verify checks the id_token's signature and claims and records its nonce.
func (t *Tool) verify(ctx context.Context, p domain.LTIPlatform, tok *jwt.JSONWebToken) (launchClaims, error) {
	key, err := t.keys.key(ctx, t.client(), p.JWKSURL, tok.Headers[0].KeyID)
	var down *unreachable
	if errors.As(err, &down) {
		return launchClaims{}, &Error{Reason: "unavailable", Err: domain.Errorf(domain.EUNAVAILABLE, "the platform's keys cannot be read: %s", down)}
	}
	if err != nil {
		return launchClaims{}, refuse("signature", "no key of the platform verifies the id_token: %s", err)
	}
	var c launchClaims
	if err := tok.Claims(key.Key, &c); err != nil {
		return launchClaims{}, refuse("signature", "the id_token's signature does not verify with the platform's key %q", key.KeyID)
	}
	now := float64(t.DB.Now().Unix())
	switch {
	case c.Issuer != p.Issuer:
		return c, refuse("issuer", "the id_token's issuer %q is not %q", c.Issuer, p.Issuer)
	case !slices.Contains(c.Audience, p.ClientID):
		return c, refuse("audience", "the id_token is for %v, not client id %q", []string(c.Audience), p.ClientID)
	case len(c.Audience) > 1 && c.AZP != p.ClientID:
		return c, refuse("audience", "the id_token lists several audiences and its azp %q is not %q", c.AZP, p.ClientID)
	case c.Expiry == 0 || c.Expiry+clockSkew.Seconds() < now:
		return c, refuse("expired", "the id_token expired")
	case c.IssuedAt > now+clockSkew.Seconds():
		return c, refuse("expired", "the id_token was issued in the future")
	case c.Nonce == "":
		return c, refuse("nonce", "the id_token has no nonce")
	case !slices.Contains(p.DeploymentIDs, c.DeploymentID):
		return c, refuse("deployment", "deployment %q is not registered for %s", c.DeploymentID, p.Issuer)
	case c.Version != "1.3.0":
		return c, refuse("version", "LTI version %q, want 1.3.0", c.Version)
	case c.MessageType != MessageResourceLink && c.MessageType != MessageDeepLinking:
		return c, refuse("message", "message type %q is not one npugrade takes", c.MessageType)
	case c.Subject == "":
		return c, refuse("claims", "the launch names no user (sub): anonymous launches are not taken")
	case c.Context.ID == "":
		return c, refuse("claims", "the launch names no course (context)")
	case c.MessageType == MessageResourceLink && c.ResourceLink.ID == "":
		return c, refuse("claims", "a resource link launch without resource_link.id")
	case c.MessageType == MessageDeepLinking && (c.DeepLinking == nil || c.DeepLinking.ReturnURL == ""):
		return c, refuse("claims", "a Deep Linking request without deep_link_return_url")
	}
	if err := t.DB.UseLTINonce(ctx, c.Nonce, time.Unix(int64(c.Expiry), 0).Add(clockSkew)); err != nil {
		if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			return c, &Error{Reason: "nonce", Err: err}
		}
		return c, err
	}
	return c, nil
}

// accept signs in the launch's user and puts them in the context's cohort.
func (t *Tool) accept(ctx context.Context, p domain.LTIPlatform, c launchClaims) (Launch, error) {
	role := Role(c.Roles)
	l := Launch{Role: role, Platform: p, Message: c.MessageType, DeepLink: c.DeepLinking, DeploymentID: c.DeploymentID}
	lc := domain.LTIContext{PlatformID: p.ID, ContextID: c.Context.ID, Title: contextTitle(c),
		LineItemsURL: c.AGS.LineItems, MembershipsURL: c.NRPS.MembershipsURL}
	if known, err := t.DB.LTIContext(ctx, p.ID, c.Context.ID); err == nil {
		lc.CohortID = known.CohortID
	} else if domain.ErrorCode(err) == domain.ENOTFOUND {
		if role != domain.RoleInstructor {
			return l, &Error{Reason: "unlinked", Err: domain.Errorf(domain.EFORBIDDEN,
				"course %q is not set up in npugrade yet: an instructor of it must open npugrade from it first", lc.Title)}
		}
		co, err := t.DB.EnsureCohort(ctx, "lti-"+shortHash(p.Issuer, p.ClientID, c.Context.ID), lc.Title)
		if err != nil {
			return l, err
		}
		lc.CohortID = co.ID
	} else if err != nil {
		return l, err
	}
	// A user first seen here joins the course's cohort only.
	u, err := t.DB.ExternalUserIn(ctx, p.Issuer, c.Subject, c.login(), role, lc.CohortID)
	if err != nil {
		return l, err
	}
	l.User = u
	if l.Context, err = t.DB.SaveLTIContext(ctx, lc); err != nil {
		return l, err
	}
	if err := t.DB.AddCohortMember(ctx, l.Context.CohortID, u.ID, role); err != nil {
		return l, err
	}
	if c.MessageType == MessageResourceLink {
		l.Exercise = t.exerciseOf(c)
		if l.Exercise != "" && c.AGS.LineItem != "" {
			if err := t.DB.SetLTILineItem(ctx, l.Context.ID, l.Exercise, c.AGS.LineItem); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

func contextTitle(c launchClaims) string {
	for _, v := range []string{c.Context.Title, c.Context.Label, c.Context.ID} {
		if v != "" {
			return v
		}
	}
	return ""
}

// exerciseOf is the exercise a resource link opens: its custom parameter
// exercise (Deep Linking sets it; an admin types exercise=ch1 in Moodle),
// else a target_link_uri of /exercises/ID or /lti/launch?exercise=ID.
// An exercise the catalog does not serve is none.
func (t *Tool) exerciseOf(c launchClaims) string {
	id, _ := c.Custom["exercise"].(string)
	if id == "" {
		if u, err := url.Parse(c.TargetLink); err == nil {
			if rest, ok := strings.CutPrefix(u.Path, "/exercises/"); ok {
				id = strings.Trim(rest, "/")
			} else {
				id = u.Query().Get("exercise")
			}
		}
	}
	if id == "" || t.Catalog == nil {
		return id
	}
	if _, err := t.Catalog.Get(id); err != nil {
		return ""
	}
	return id
}

func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:6])
}
