package sso

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/npugrade/npugrade/internal/domain"
)

// StateStore keeps sign-ins under way (store.PutLoginState): in the
// database, so any server may take the callback; each state is used once.
type StateStore interface {
	PutLoginState(ctx context.Context, state, data string, ttl time.Duration) error
	TakeLoginState(ctx context.Context, state string) (string, error)
}

// stateTTL is how long a sign-in at the provider may take.
const stateTTL = 10 * time.Minute

// pending is what the callback needs back.
type pending struct {
	Verifier string `json:"v"`
	Nonce    string `json:"n,omitempty"`
	Next     string `json:"next,omitempty"`
}

// HubLogin signs browsers in through the hub's OAuth provider.
type HubLogin struct {
	Hub    *Hub
	States StateStore
	Users  Users
}

func (l *HubLogin) config(redirectURI string) *oauth2.Config {
	base := strings.TrimRight(l.Hub.URL, "/")
	return &oauth2.Config{ClientID: l.Hub.ClientID, ClientSecret: l.Hub.ClientSecret, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: base + "/hub/api/oauth2/authorize", TokenURL: base + "/hub/api/oauth2/token",
			AuthStyle: oauth2.AuthStyleInParams}}
}

// Begin keeps a fresh state and returns the hub's authorization URL.
func (l *HubLogin) Begin(ctx context.Context, redirectURI, next string) (string, error) {
	verifier := oauth2.GenerateVerifier()
	state, err := putState(ctx, l.States, pending{Verifier: verifier, Next: next})
	if err != nil {
		return "", err
	}
	return l.config(redirectURI).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), nil
}

// Finish takes the callback's state and code: it exchanges the code,
// reads the hub user with the access token and returns the npugrade user
// and the page to go to.
func (l *HubLogin) Finish(ctx context.Context, redirectURI, state, code string) (domain.User, string, error) {
	pd, err := takeState(ctx, l.States, state)
	if err != nil {
		return domain.User{}, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, l.Hub.client())
	tok, err := l.config(redirectURI).Exchange(ctx, code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		if re, ok := err.(*oauth2.RetrieveError); ok && re.Response != nil && re.Response.StatusCode < 500 {
			return domain.User{}, "", domain.Errorf(domain.EUNAUTHORIZED, "JupyterHub refused the sign-in code (%s)", re.Response.Status)
		}
		return domain.User{}, "", domain.Errorf(domain.EUNAVAILABLE, "JupyterHub at %s: exchanging the sign-in code: %s", l.Hub.URL, reason(err))
	}
	hu, err := l.Hub.User(ctx, "Bearer "+tok.AccessToken)
	if err != nil {
		return domain.User{}, "", err
	}
	u, err := l.Users.ExternalUser(ctx, l.Hub.Issuer(), hu.Name, hu.Name, l.Hub.Role(hu))
	return u, pd.Next, err
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random state: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func putState(ctx context.Context, s StateStore, p pending) (string, error) {
	state, err := randomString()
	if err != nil {
		return "", err
	}
	return state, keep(ctx, s, state, p)
}

func keep(ctx context.Context, s StateStore, state string, p pending) error {
	b, _ := json.Marshal(p)
	return s.PutLoginState(ctx, state, string(b), stateTTL)
}

func takeState(ctx context.Context, s StateStore, state string) (pending, error) {
	if state == "" {
		return pending{}, domain.Errorf(domain.EUNAUTHORIZED, "the sign-in has no state; start again")
	}
	data, err := s.TakeLoginState(ctx, state)
	if err != nil {
		return pending{}, err
	}
	var p pending
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return pending{}, fmt.Errorf("read sign-in state: %w", err)
	}
	return p, nil
}
