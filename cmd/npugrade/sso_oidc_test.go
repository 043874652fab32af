package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// testIdP is an OpenID provider on loopback built on go-jose: discovery,
// JWKS, an authorization endpoint that signs in whoever the test names
// and a token endpoint that checks PKCE and signs the id_token. Its
// knobs make the id_token wrong in one way each.
type testIdP struct {
	srv *httptest.Server
	key *rsa.PrivateKey

	mu                          sync.Mutex
	sub, login                  string
	groups                      []string
	wrongAud, wrongNonce, stale bool
	codes                       map[string]url.Values // code → the authorization request
}

func newTestIdP(t *testing.T) *testIdP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &testIdP{key: key, codes: map[string]url.Values{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		u := p.srv.URL
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": u, "authorization_endpoint": u + "/authorize",
			"token_endpoint": u + "/token", "jwks_uri": u + "/jwks", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" {
			http.Error(w, "PKCE, state and nonce are required", http.StatusBadRequest)
			return
		}
		code := strings.Repeat("c", 8) + q.Get("state")[:8]
		p.mu.Lock()
		p.codes[code] = q
		p.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) { p.token(t, w, r) })
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *testIdP) token(t *testing.T, w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
		return
	}
	aud, nonce, exp := q.Get("client_id"), q.Get("nonce"), time.Now().Add(5*time.Minute)
	if p.wrongAud {
		aud = "another-client"
	}
	if p.wrongNonce {
		nonce = "replayed"
	}
	if p.stale {
		exp = time.Now().Add(-time.Hour)
	}
	claims, _ := json.Marshal(map[string]any{"iss": p.srv.URL, "aud": aud, "sub": p.sub, "nonce": nonce,
		"iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": exp.Unix(), "preferred_username": p.login, "groups": p.groups})
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Error(err)
		return
	}
	jws, _ := signer.Sign(claims)
	idt, _ := jws.CompactSerialize()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": idt})
}

// oidcSignIn signs a browser (a client with a cookie jar) in through
// the provider; it returns the final status, path and page.
func oidcSignIn(t *testing.T, base string) (int, string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(base + "/login/oidc?next=/exercises")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL.Path, string(page)
}

// TestOIDCWebSignIn: a learner and an instructor (roles claim) sign in
// to the pages through an OpenID provider (code flow with PKCE, state
// and nonce); the same subject under a renamed login is the same user;
// an id_token with another audience, another nonce or past its expiry
// is refused with the sign-in page saying why.
func TestOIDCWebSignIn(t *testing.T) {
	t.Parallel()
	idp := newTestIdP(t)
	dbURL := storetest.URL(t, "sqlite")
	s := startServer(t, dbURL, "--local-runner", "0", "--oidc-issuer", idp.srv.URL,
		"--oidc-client-id", "npugrade", "--oidc-client-secret", "secret")
	defer s.stop()
	set := func(sub, login string, groups ...string) {
		idp.mu.Lock()
		idp.sub, idp.login, idp.groups = sub, login, groups
		idp.mu.Unlock()
	}
	set("s-ada", "ada")
	if st, at, page := oidcSignIn(t, s.url); st != http.StatusOK || at != "/exercises" {
		t.Fatalf("learner: %d at %s: %.300s", st, at, page)
	}
	set("s-prof", "prof", "staff", "instructor")
	if st, at, _ := oidcSignIn(t, s.url); st != http.StatusOK || at != "/exercises" {
		t.Fatalf("instructor: %d at %s", st, at)
	}
	set("s-ada", "ada.lovelace") // renamed claim, same subject
	if st, _, _ := oidcSignIn(t, s.url); st != http.StatusOK {
		t.Fatalf("renamed login: %d", st)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"user", "list", "--db", dbURL}, &out, &errb); code != 0 {
		t.Fatalf("user list: %s", errb.String())
	}
	if got := out.String(); !strings.Contains(got, "ada\tlearner") || !strings.Contains(got, "prof\tinstructor") || strings.Contains(got, "lovelace") {
		t.Errorf("users after the sign-ins:\n%s", got)
	}
	for name, knob := range map[string]*bool{"audience": &idp.wrongAud, "nonce": &idp.wrongNonce, "expiry": &idp.stale} {
		idp.mu.Lock()
		*knob = true
		idp.mu.Unlock()
		st, _, page := oidcSignIn(t, s.url)
		if st != http.StatusUnauthorized || !strings.Contains(page, "id_token") {
			t.Errorf("wrong %s: %d, want 401 naming the id_token: %.300s", name, st, page)
		}
		idp.mu.Lock()
		*knob = false
		idp.mu.Unlock()
	}
}
