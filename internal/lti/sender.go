package lti

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// SendStore is what the sender reads and writes (store.DB).
type SendStore interface {
	ClaimLTIScores(ctx context.Context, limit int, lease time.Duration) ([]domain.LTIScore, error)
	LTIScoreSent(ctx context.Context, s domain.LTIScore) error
	LTIScoreFailed(ctx context.Context, s domain.LTIScore, reason string, retryAt time.Time) error
	LTIContextByID(ctx context.Context, id int64) (domain.LTIContext, error)
	LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error)
	LTILineItem(ctx context.Context, contextPK int64, exerciseID string) (string, error)
	ClaimLTILineItem(ctx context.Context, contextPK int64, exerciseID string, lease time.Duration) (string, bool, error)
	SetLTILineItem(ctx context.Context, contextPK int64, exerciseID, url string) error
	LTISubject(ctx context.Context, issuer string, userID int64) (string, error)
	Now() time.Time
}

// Sender posts owed scores to the platforms' AGS score services. Rows
// are leased in the database, so any number of servers send together
// and a sender that dies leaves its rows to the others when the lease
// ends; a failed post (429, 5xx, a network error) is retried with
// backoff. A version is recorded sent only once the platform accepted
// it, so a score is accepted once however often a post failed.
type Sender struct {
	DB      SendStore
	Keys    *Keys
	Catalog *exercise.Catalog
	HTTP    *http.Client
	Log     *slog.Logger
	// Batch is how many scores one round takes (default 50); Lease how
	// long a taken one is reserved (default 1 minute).
	Batch int
	Lease time.Duration
	// Backoff is the wait after the n-th failed attempt (default n²×10 s,
	// at most an hour); a 429's Retry-After is waited when longer.
	Backoff func(attempt int) time.Duration

	tokens tokenCache
}

// SendOnce sends the due scores and returns how many were accepted.
func (s *Sender) SendOnce(ctx context.Context) (int, error) {
	batch, lease := s.Batch, s.Lease
	if batch <= 0 {
		batch = 50
	}
	if lease <= 0 {
		lease = time.Minute
	}
	due, err := s.DB.ClaimLTIScores(ctx, batch, lease)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sc := range due {
		if err := s.send(ctx, sc); err != nil {
			wait := s.backoff(sc.Attempts)
			if ra := retryAfter(err); ra > wait {
				wait = ra
			}
			if ferr := s.DB.LTIScoreFailed(ctx, sc, err.Error(), s.DB.Now().Add(wait)); ferr != nil {
				return n, ferr
			}
			s.log().Warn("lti score not sent", "context", sc.ContextPK, "exercise", sc.ExerciseID, "learner", sc.UserID,
				"attempt", sc.Attempts, "retry_in", wait, "err", err)
			continue
		}
		if err := s.DB.LTIScoreSent(ctx, sc); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Run sends every interval until ctx ends.
func (s *Sender) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.SendOnce(ctx); err != nil && ctx.Err() == nil {
				s.log().Warn("send lti scores", "err", err)
			}
		}
	}
}

func (s *Sender) backoff(attempt int) time.Duration {
	if s.Backoff != nil {
		return s.Backoff(attempt)
	}
	return min(time.Duration(attempt*attempt)*10*time.Second, time.Hour)
}

func (s *Sender) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Sender) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return &http.Client{Timeout: Timeout}
}

// send posts one score (AGS 3.4) to its line item, made first when the
// course has none for the exercise.
func (s *Sender) send(ctx context.Context, sc domain.LTIScore) error {
	lc, err := s.DB.LTIContextByID(ctx, sc.ContextPK)
	if err != nil {
		return err
	}
	p, err := s.DB.LTIPlatformByID(ctx, lc.PlatformID)
	if err != nil {
		return err
	}
	subject, err := s.DB.LTISubject(ctx, p.Issuer, sc.UserID)
	if err != nil || subject == "" {
		return fmt.Errorf("learner %d has no user id at %s: %v", sc.UserID, p.Issuer, err)
	}
	item, err := s.lineItem(ctx, p, lc, sc)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{
		"userId": subject, "scoreGiven": sc.Score, "scoreMaximum": sc.MaxScore,
		"activityProgress": Submitted, "gradingProgress": sc.Progress,
		"timestamp": sc.ScoredAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	})
	_, err = s.call(ctx, p, http.MethodPost, servicePath(item, "/scores"), "application/vnd.ims.lis.v1.score+json", body, ScopeScore)
	return err
}

// servicePath appends a path to a service URL before its query (a
// Moodle line item URL is …/lineitem?type_id=…).
func servicePath(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base + path
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	return u.String()
}

type lineItem struct {
	ID             string  `json:"id,omitempty"`
	ScoreMaximum   float64 `json:"scoreMaximum"`
	Label          string  `json:"label"`
	ResourceID     string  `json:"resourceId"`
	Tag            string  `json:"tag"`
	ResourceLinkID string  `json:"resourceLinkId,omitempty"`
}

// lineItem is the course's line item of the exercise: the one recorded,
// else, once this server holds the claim to make it (one server at a
// time), the one of the line items service with the exercise as
// resourceId (made by an earlier try that did not record it), else a
// new one.
func (s *Sender) lineItem(ctx context.Context, p domain.LTIPlatform, lc domain.LTIContext, sc domain.LTIScore) (string, error) {
	if u, err := s.DB.LTILineItem(ctx, lc.ID, sc.ExerciseID); err != nil || u != "" {
		return u, err
	}
	if lc.LineItemsURL == "" {
		return "", fmt.Errorf("course %q has no AGS line items service (the tool's AGS scopes are not enabled at %s)", lc.ContextID, p.Issuer)
	}
	u, claimed, err := s.DB.ClaimLTILineItem(ctx, lc.ID, sc.ExerciseID, time.Minute)
	switch {
	case err != nil || u != "":
		return u, err
	case !claimed:
		return "", fmt.Errorf("another server is creating the line item of %s in course %q", sc.ExerciseID, lc.ContextID)
	}
	q := url.Values{"resource_id": {sc.ExerciseID}, "tag": {"npugrade"}}
	list := lc.LineItemsURL
	if strings.Contains(list, "?") {
		list += "&" + q.Encode()
	} else {
		list += "?" + q.Encode()
	}
	b, err := s.call(ctx, p, http.MethodGet, list, "", nil, ScopeLineItem)
	if err != nil {
		return "", err
	}
	var items []lineItem
	_ = json.Unmarshal(b, &items)
	for _, it := range items {
		if it.ResourceID == sc.ExerciseID && it.ID != "" {
			return it.ID, s.DB.SetLTILineItem(ctx, lc.ID, sc.ExerciseID, it.ID)
		}
	}
	label := sc.ExerciseID
	if ex, err := s.Catalog.Get(sc.ExerciseID); err == nil && ex.Title != "" {
		label = ex.Title
	}
	body, _ := json.Marshal(lineItem{ScoreMaximum: sc.MaxScore, Label: label, ResourceID: sc.ExerciseID, Tag: "npugrade"})
	b, err = s.call(ctx, p, http.MethodPost, lc.LineItemsURL, "application/vnd.ims.lis.v2.lineitem+json", body, ScopeLineItem)
	if err != nil {
		return "", err
	}
	var made lineItem
	if err := json.Unmarshal(b, &made); err != nil || made.ID == "" {
		return "", fmt.Errorf("the platform's new line item has no id")
	}
	return made.ID, s.DB.SetLTILineItem(ctx, lc.ID, sc.ExerciseID, made.ID)
}

// statusError is a platform's refusal; RetryAfter is its 429's wait.
type statusError struct {
	Status     int
	RetryAfter time.Duration
	Body       string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("platform answered %d %s", e.Status, e.Body)
}

func retryAfter(err error) time.Duration {
	if se, ok := err.(*statusError); ok {
		return se.RetryAfter
	}
	return 0
}

// call makes one service call with a token of scope.
func (s *Sender) call(ctx context.Context, p domain.LTIPlatform, method, u, ctype string, body []byte, scope string) ([]byte, error) {
	accept := "application/json, application/vnd.ims.lis.v2.lineitemcontainer+json, application/vnd.ims.lis.v2.lineitem+json"
	return s.do(ctx, p, method, u, ctype, accept, body, scope, nil)
}

// do makes one service call; seen, when given, sees the response.
func (s *Sender) do(ctx context.Context, p domain.LTIPlatform, method, u, ctype, accept string, body []byte, scope string, seen func(*http.Response)) ([]byte, error) {
	tok, err := s.tokens.get(ctx, s, p, scope)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", accept)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode/100 != 2 {
		se := &statusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b[:min(len(b), 200)]))}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			se.RetryAfter = time.Duration(min(secs, 3600)) * time.Second
		}
		if resp.StatusCode == http.StatusUnauthorized {
			s.tokens.drop(p.ID, scope) // revoked or expired early: the next try asks again
		}
		return nil, se
	}
	if seen != nil {
		seen(resp)
	}
	return b, nil
}

// tokenCache keeps access tokens per platform and scope until shortly
// before they expire (a cache: any server may get its own).
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedToken
}

type cachedToken struct {
	value   string
	expires time.Time
}

func tokenKey(platformID int64, scope string) string {
	return strconv.FormatInt(platformID, 10) + " " + scope
}

func (c *tokenCache) drop(platformID int64, scope string) {
	c.mu.Lock()
	delete(c.m, tokenKey(platformID, scope))
	c.mu.Unlock()
}

func (c *tokenCache) get(ctx context.Context, s *Sender, p domain.LTIPlatform, scope string) (string, error) {
	key := tokenKey(p.ID, scope)
	c.mu.Lock()
	t, ok := c.m[key]
	c.mu.Unlock()
	if ok && time.Now().Before(t.expires) {
		return t.value, nil
	}
	value, ttl, err := s.fetchToken(ctx, p, scope)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedToken{}
	}
	c.m[key] = cachedToken{value: value, expires: time.Now().Add(ttl - 30*time.Second)}
	c.mu.Unlock()
	return value, nil
}

// fetchToken is the client-credentials grant with a JWT client
// assertion signed by npugrade's key (IMS Security Framework 4.1). Its
// aud is the platform's Audience when registered (Canvas wants its
// OAuth issuer, not the token URL the call goes to), else the token URL.
func (s *Sender) fetchToken(ctx context.Context, p domain.LTIPlatform, scope string) (string, time.Duration, error) {
	aud := p.Audience
	if aud == "" {
		aud = p.TokenURL
	}
	now := s.DB.Now()
	assertion, err := s.Keys.Sign(ctx, map[string]any{"iss": p.ClientID, "sub": p.ClientID, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": auth.RandomID(16)})
	if err != nil {
		return "", 0, err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion": {assertion}, "scope": {scope}}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("token %s: %w", p.TokenURL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client().Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("token %s: %w", p.TokenURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode != http.StatusOK {
		se := &statusError{Status: resp.StatusCode, Body: "from the token endpoint: " + strings.TrimSpace(string(b[:min(len(b), 200)]))}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			se.RetryAfter = time.Duration(min(secs, 3600)) * time.Second
		}
		return "", 0, se
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || tr.AccessToken == "" {
		return "", 0, fmt.Errorf("token %s: no access_token in the answer", p.TokenURL)
	}
	ttl := time.Duration(tr.ExpiresIn) * time.Second
	if ttl < time.Minute {
		ttl = time.Minute
	}
	return tr.AccessToken, ttl, nil
}
