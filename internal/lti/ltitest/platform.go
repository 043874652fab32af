// Package ltitest is an LTI 1.3 platform for tests, written from the IMS
// specifications (LTI 1.3 Core, Security Framework 1.0, AGS 2.0, Deep
// Linking 2.0): its own RSA key and JWKS, an OIDC authorization endpoint
// that answers a tool's login with a signed id_token in an auto-posting
// form, a token endpoint that checks the tool's client assertion against
// the tool's JWKS, and an AGS line items and scores service that records
// what it accepts and can be told to fail (429, 500) first.
package ltitest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/npugrade/npugrade/internal/domain"
)

// Platform is a running test platform.
type Platform struct {
	Server *httptest.Server
	// Issuer, ClientID and DeploymentID identify it and npugrade there
	// (Issuer defaults to the server's URL).
	Issuer, ClientID, DeploymentID string
	// ToolJWKS is npugrade's /lti/jwks, which client assertions are
	// checked against; TokenAudience the aud they must carry (default
	// the token URL).
	ToolJWKS, TokenAudience string

	key    *rsa.PrivateKey
	kid    string
	signer *rsa.PrivateKey // signs the launches instead of key (a forgery)

	mu        sync.Mutex
	next      map[string]any // the claims of the next launch
	failures  []int
	tokens    map[string]bool
	lineItems []LineItem
	scores    []Score
	// Refusals are the token and service calls it refused, in words.
	refusals []string
	linked   []map[string]any
	// scoreDelay is how long each score post takes (SlowScores).
	scoreDelay time.Duration
	members    []Member
}

// Member is one membership of the NRPS roster (NRPS 2.0 2.2).
type Member struct {
	UserID    string   `json:"user_id"`
	Roles     []string `json:"roles"`
	Status    string   `json:"status,omitempty"`
	Name      string   `json:"name,omitempty"`
	Email     string   `json:"email,omitempty"`
	SourcedID string   `json:"lis_person_sourcedid,omitempty"`
}

// LineItem is one column of the platform's gradebook.
type LineItem struct {
	ID           string  `json:"id"`
	ScoreMaximum float64 `json:"scoreMaximum"`
	Label        string  `json:"label"`
	ResourceID   string  `json:"resourceId"`
	Tag          string  `json:"tag"`
}

// Score is an accepted AGS score post.
type Score struct {
	LineItem         string  `json:"-"`
	UserID           string  `json:"userId"`
	ScoreGiven       float64 `json:"scoreGiven"`
	ScoreMaximum     float64 `json:"scoreMaximum"`
	ActivityProgress string  `json:"activityProgress"`
	GradingProgress  string  `json:"gradingProgress"`
	Timestamp        string  `json:"timestamp"`
}

// New starts a platform; it stops when the test ends.
func New(t testing.TB) *Platform {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Platform{key: key, kid: "platform-key-1", ClientID: "npugrade-client", DeploymentID: "deployment-1", tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /auth", p.auth)
	mux.HandleFunc("POST /auth", p.auth)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /lineitems", p.listLineItems)
	mux.HandleFunc("POST /lineitems", p.addLineItem)
	mux.HandleFunc("POST /lineitems/{n}/scores", p.postScore)
	mux.HandleFunc("POST /deep-link-return", p.deepLinkReturn)
	mux.HandleFunc("GET /memberships", p.memberships)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Server.Close)
	p.Issuer = p.Server.URL
	return p
}

// Registration is what an admin registers for this platform.
func (p *Platform) Registration() domain.LTIPlatform {
	return domain.LTIPlatform{Name: "test platform", Issuer: p.Issuer, ClientID: p.ClientID, DeploymentIDs: []string{p.DeploymentID},
		AuthLoginURL: p.Server.URL + "/auth", TokenURL: p.Server.URL + "/token", JWKSURL: p.Server.URL + "/jwks", Audience: p.TokenAudience}
}

// LineItemsURL is its AGS line items service of every context.
func (p *Platform) LineItemsURL() string { return p.Server.URL + "/lineitems" }

func (p *Platform) jwks(w http.ResponseWriter, _ *http.Request) {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "RS256", Use: "sig"}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// Sign signs claims with the platform's key (or with key when given: a
// forged launch).
func (p *Platform) Sign(t testing.TB, claims map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	if key == nil {
		key = p.key
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", p.kid))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ResourceLink is the claim set of a resource link launch of user sub
// with roles (LTI 1.3 Core 5.3), in context, with AGS and custom exercise.
func (p *Platform) ResourceLink(sub, contextID, exercise string, roles ...string) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": p.Issuer, "aud": p.ClientID, "sub": sub, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"name": "User " + sub, "email": sub + "@example.edu",
		"https://purl.imsglobal.org/spec/lti/claim/message_type":    "LtiResourceLinkRequest",
		"https://purl.imsglobal.org/spec/lti/claim/version":         "1.3.0",
		"https://purl.imsglobal.org/spec/lti/claim/deployment_id":   p.DeploymentID,
		"https://purl.imsglobal.org/spec/lti/claim/target_link_uri": "",
		"https://purl.imsglobal.org/spec/lti/claim/resource_link":   map[string]any{"id": "link-" + exercise, "title": exercise},
		"https://purl.imsglobal.org/spec/lti/claim/roles":           roles,
		"https://purl.imsglobal.org/spec/lti/claim/context":         map[string]any{"id": contextID, "label": "TA101", "title": "TorchAir 101"},
		"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": map[string]any{
			"scope":     []string{"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", "https://purl.imsglobal.org/spec/lti-ags/scope/score"},
			"lineitems": p.LineItemsURL()},
		"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": map[string]any{
			"context_memberships_url": p.MembershipsURL(), "service_versions": []string{"2.0"}},
	}
	if exercise != "" {
		c["https://purl.imsglobal.org/spec/lti/claim/custom"] = map[string]any{"exercise": exercise}
	}
	return c
}

// Role URIs of LIS v2 (LTI 1.3 Core A.2.2).
const (
	Learner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	Instructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
)

// SignWith makes the next launches signed with key (nil: its own).
func (p *Platform) SignWith(key *rsa.PrivateKey) {
	p.mu.Lock()
	p.signer = key
	p.mu.Unlock()
}

// SetNext makes claims the next launch's (its nonce is the login's).
func (p *Platform) SetNext(claims map[string]any) {
	p.mu.Lock()
	p.next = claims
	p.mu.Unlock()
}

// auth is the OIDC authorization endpoint (Security Framework 5.1.1.2):
// it checks the tool's request and answers with a form that posts the
// signed id_token and the state to the redirect_uri.
func (p *Platform) auth(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form
	for k, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": p.ClientID} {
		if q.Get(k) != want {
			http.Error(w, fmt.Sprintf("%s: %q, want %q", k, q.Get(k), want), http.StatusBadRequest)
			return
		}
	}
	if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("redirect_uri") == "" || q.Get("login_hint") == "" {
		http.Error(w, "state, nonce, redirect_uri and login_hint are required", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	claims, signer := p.next, p.signer
	p.mu.Unlock()
	if claims == nil {
		http.Error(w, "no launch set up", http.StatusBadRequest)
		return
	}
	c := map[string]any{}
	for k, v := range claims {
		c[k] = v
	}
	c["nonce"] = q.Get("nonce")
	tok := p.Sign(nopT{}, c, signer)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><body onload="document.forms[0].submit()"><form method="post" action="%s">`+
		`<input type="hidden" name="id_token" value="%s"><input type="hidden" name="state" value="%s"></form></body></html>`,
		html.EscapeString(q.Get("redirect_uri")), html.EscapeString(tok), html.EscapeString(q.Get("state")))
}

// nopT lets the handlers sign (they cannot fail a test).
type nopT struct{ testing.TB }

func (nopT) Helper()                   {}
func (nopT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (nopT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

var formField = regexp.MustCompile(`name="(id_token|state)" value="([^"]*)"`)
var formAction = regexp.MustCompile(`action="([^"]*)"`)

// Launched is a launch the way a browser went through it.
type Launched struct {
	// Response is the tool's answer to the form post (redirects followed).
	Response *http.Response
	Body     string
	// Action, IDToken and State are what the form posted (for replays).
	Action, IDToken, State string
}

// Launch runs a whole launch of claims with client (which keeps the
// tool's cookies): the login initiation at the tool, the tool's
// redirect to /auth, and the auto-posted form back to the tool.
func (p *Platform) Launch(t testing.TB, client *http.Client, toolURL string, claims map[string]any) Launched {
	t.Helper()
	p.SetNext(claims)
	q := url.Values{"iss": {p.Issuer}, "login_hint": {fmt.Sprint(claims["sub"])}, "target_link_uri": {toolURL + "/lti/launch"},
		"client_id": {p.ClientID}, "lti_deployment_id": {p.DeploymentID}, "lti_message_hint": {"hint-1"}}
	resp, err := client.Get(toolURL + "/lti/login?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host != p.Server.Listener.Addr().String() {
		t.Fatalf("login: %d at %s: %s", resp.StatusCode, resp.Request.URL, b)
	}
	l := Launched{}
	for _, m := range formField.FindAllStringSubmatch(string(b), -1) {
		if m[1] == "id_token" {
			l.IDToken = html.UnescapeString(m[2])
		} else {
			l.State = html.UnescapeString(m[2])
		}
	}
	if m := formAction.FindStringSubmatch(string(b)); m != nil {
		l.Action = html.UnescapeString(m[1])
	}
	l.Response, l.Body = Post(t, client, l.Action, l.IDToken, l.State)
	return l
}

// Post posts an id_token and state to a tool's launch URL, as the
// platform's form does (from the platform's origin).
func Post(t testing.TB, client *http.Client, action, idToken, state string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, action, strings.NewReader(url.Values{"id_token": {idToken}, "state": {state}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// SlowScores makes each line item listing and score post take d (a
// slow platform).
func (p *Platform) SlowScores(d time.Duration) {
	p.mu.Lock()
	p.scoreDelay = d
	p.mu.Unlock()
}

func (p *Platform) slow() {
	p.mu.Lock()
	d := p.scoreDelay
	p.mu.Unlock()
	time.Sleep(d)
}

// FailNext makes the next score posts answer these statuses, in order.
func (p *Platform) FailNext(statuses ...int) {
	p.mu.Lock()
	p.failures = append(p.failures, statuses...)
	p.mu.Unlock()
}

// PendingFailures is how many failures set up by FailNext are left.
func (p *Platform) PendingFailures() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.failures)
}

// Scores returns the accepted scores, in order.
func (p *Platform) Scores() []Score {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Score(nil), p.scores...)
}

// LineItems returns its line items.
func (p *Platform) LineItems() []LineItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]LineItem(nil), p.lineItems...)
}

// Refusals lists the calls it refused.
func (p *Platform) Refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refusals...)
}

func (p *Platform) refuse(w http.ResponseWriter, status int, why string) {
	p.mu.Lock()
	p.refusals = append(p.refusals, why)
	p.mu.Unlock()
	http.Error(w, why, status)
}

// token is the OAuth 2 token endpoint with JWT client assertions
// (Security Framework 4.1, RFC 7523).
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if r.Form.Get("grant_type") != "client_credentials" ||
		r.Form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		p.refuse(w, http.StatusBadRequest, "token: wrong grant or assertion type")
		return
	}
	tok, err := jwt.ParseSigned(r.Form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		p.refuse(w, http.StatusBadRequest, "token: assertion is not a JWT")
		return
	}
	set, err := toolKeys(p.ToolJWKS)
	if err != nil {
		p.refuse(w, http.StatusBadRequest, "token: tool JWKS: "+err.Error())
		return
	}
	keys := set.Key(tok.Headers[0].KeyID)
	var c jwt.Claims
	if len(keys) == 0 || tok.Claims(keys[0].Key, &c) != nil {
		p.refuse(w, http.StatusUnauthorized, "token: assertion signature")
		return
	}
	aud := p.TokenAudience
	if aud == "" {
		aud = p.Server.URL + "/token"
	}
	if err := c.Validate(jwt.Expected{Issuer: p.ClientID, Subject: p.ClientID, AnyAudience: jwt.Audience{aud}, Time: time.Now()}); err != nil || c.ID == "" {
		p.refuse(w, http.StatusUnauthorized, fmt.Sprintf("token: assertion claims (want aud %s): %v", aud, err))
		return
	}
	access := fmt.Sprintf("at-%d", time.Now().UnixNano())
	p.mu.Lock()
	p.tokens[access] = true
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": r.Form.Get("scope")})
}

func toolKeys(u string) (jose.JSONWebKeySet, error) {
	resp, err := http.Get(u)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	return set, json.NewDecoder(resp.Body).Decode(&set)
}

func (p *Platform) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	ok := p.tokens[tok]
	p.mu.Unlock()
	if !ok {
		p.refuse(w, http.StatusUnauthorized, "service call without a valid access token")
	}
	return ok
}

func (p *Platform) listLineItems(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	rid := r.URL.Query().Get("resource_id")
	out := []LineItem{}
	for _, li := range p.LineItems() {
		if rid == "" || li.ResourceID == rid {
			out = append(out, li)
		}
	}
	p.slow() // the answer, as it was when asked, arrives late
	w.Header().Set("Content-Type", "application/vnd.ims.lis.v2.lineitemcontainer+json")
	_ = json.NewEncoder(w).Encode(out)
}

func (p *Platform) addLineItem(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	var li LineItem
	if err := json.NewDecoder(r.Body).Decode(&li); err != nil || li.Label == "" || li.ScoreMaximum <= 0 {
		p.refuse(w, http.StatusBadRequest, "line item: label and a positive scoreMaximum are required")
		return
	}
	p.mu.Lock()
	li.ID = p.Server.URL + "/lineitems/" + strconv.Itoa(len(p.lineItems)+1)
	p.lineItems = append(p.lineItems, li)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/vnd.ims.lis.v2.lineitem+json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(li)
}

// postScore is AGS 3.4's score service: a failure set up by FailNext
// first, else the score is checked and recorded.
func (p *Platform) postScore(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	p.slow()
	p.mu.Lock()
	fail := 0
	if len(p.failures) > 0 {
		fail, p.failures = p.failures[0], p.failures[1:]
	}
	p.mu.Unlock()
	if fail != 0 {
		if fail == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		http.Error(w, "failing as told", fail)
		return
	}
	if r.Header.Get("Content-Type") != "application/vnd.ims.lis.v1.score+json" {
		p.refuse(w, http.StatusUnsupportedMediaType, "score: content type "+r.Header.Get("Content-Type"))
		return
	}
	var s Score
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil || s.UserID == "" || s.Timestamp == "" || s.ActivityProgress == "" || s.GradingProgress == "" {
		p.refuse(w, http.StatusBadRequest, "score: userId, timestamp, activityProgress and gradingProgress are required")
		return
	}
	if _, err := time.Parse(time.RFC3339, s.Timestamp); err != nil {
		p.refuse(w, http.StatusBadRequest, "score: timestamp is not ISO 8601")
		return
	}
	s.LineItem = p.Server.URL + "/lineitems/" + r.PathValue("n")
	p.mu.Lock()
	p.scores = append(p.scores, s)
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// DeepLinkReturnURL is where its Deep Linking requests want the answer.
func (p *Platform) DeepLinkReturnURL() string { return p.Server.URL + "/deep-link-return" }

// DeepLinked returns the claims of the LtiDeepLinkingResponses it took.
func (p *Platform) DeepLinked() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.linked...)
}

// deepLinkReturn takes a Deep Linking response (Deep Linking 2.0 4.2):
// the JWT form field, signed by the tool (its JWKS), iss the client id,
// aud the platform.
func (p *Platform) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	tok, err := jwt.ParseSigned(r.FormValue("JWT"), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		p.refuse(w, http.StatusBadRequest, "deep link: JWT is not a signed JWT")
		return
	}
	set, err := toolKeys(p.ToolJWKS)
	keys := set.Key(tok.Headers[0].KeyID)
	var std jwt.Claims
	claims := map[string]any{}
	if err != nil || len(keys) == 0 || tok.Claims(keys[0].Key, &std, &claims) != nil {
		p.refuse(w, http.StatusUnauthorized, "deep link: signature")
		return
	}
	if err := std.Validate(jwt.Expected{Issuer: p.ClientID, AnyAudience: jwt.Audience{p.Issuer}, Time: time.Now()}); err != nil {
		p.refuse(w, http.StatusUnauthorized, "deep link: claims: "+err.Error())
		return
	}
	p.mu.Lock()
	p.linked = append(p.linked, claims)
	p.mu.Unlock()
	fmt.Fprint(w, "placed")
}

// MembershipsURL is its NRPS service of every context.
func (p *Platform) MembershipsURL() string { return p.Server.URL + "/memberships" }

// SetMembers sets the roster its NRPS service lists.
func (p *Platform) SetMembers(ms []Member) {
	p.mu.Lock()
	p.members = append([]Member(nil), ms...)
	p.mu.Unlock()
}

// memberships is NRPS 2.0's membership container, two members a page
// (the next page in a Link header), for a token of the NRPS scope only.
func (p *Platform) memberships(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(w, r) {
		return
	}
	if r.Header.Get("Accept") != "application/vnd.ims.lti-nrps.v2.membershipcontainer+json" {
		p.refuse(w, http.StatusNotAcceptable, "memberships: Accept "+r.Header.Get("Accept"))
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p.mu.Lock()
	all := append([]Member(nil), p.members...)
	p.mu.Unlock()
	lo, hi := min(page*2, len(all)), min(page*2+2, len(all))
	if hi < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s?page=%d>; rel="next"`, p.MembershipsURL(), page+1))
	}
	w.Header().Set("Content-Type", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": p.MembershipsURL(), "context": map[string]any{"id": "course"}, "members": all[lo:hi]})
}
