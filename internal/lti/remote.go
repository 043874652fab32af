package lti

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Timeout bounds every call to a platform (JWKS, token, AGS, NRPS).
const Timeout = 10 * time.Second

// maxBody bounds what a platform's answer may be.
const maxBody = 1 << 20

// remoteKeys caches platforms' key sets by URL: refreshed after five
// minutes, or at once (at most every 10 s) when a launch names an unknown
// kid, which is how a platform's rotation is noticed.
type remoteKeys struct {
	mu   sync.Mutex
	sets map[string]keySet
}

type keySet struct {
	set     jose.JSONWebKeySet
	fetched time.Time
}

func (r *remoteKeys) key(ctx context.Context, client *http.Client, url, kid string) (*jose.JSONWebKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sets == nil {
		r.sets = map[string]keySet{}
	}
	ks, ok := r.sets[url]
	age := time.Since(ks.fetched)
	if ok && age < 5*time.Minute {
		if k := pick(ks.set, kid); k != nil {
			return k, nil
		}
	}
	if !ok || age > 10*time.Second {
		set, err := fetchJWKS(ctx, client, url)
		if err != nil {
			return nil, &unreachable{err}
		}
		ks = keySet{set: set, fetched: time.Now()}
		r.sets[url] = ks
	}
	if k := pick(ks.set, kid); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("the platform's key set has no key %q", kid)
}

// unreachable is a platform's key set that could not be read (down,
// slow, not JSON): the launch may be retried, it is not forged.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }

func pick(set jose.JSONWebKeySet, kid string) *jose.JSONWebKey {
	if kid == "" && len(set.Keys) == 1 {
		return &set.Keys[0]
	}
	for i := range set.Keys {
		if set.Keys[i].KeyID == kid && set.Keys[i].Use != "enc" {
			return &set.Keys[i]
		}
	}
	return nil
}

func fetchJWKS(ctx context.Context, client *http.Client, url string) (jose.JSONWebKeySet, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("platform JWKS %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("platform JWKS %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil || resp.StatusCode != http.StatusOK {
		return jose.JSONWebKeySet{}, fmt.Errorf("platform JWKS %s: %s %v", url, resp.Status, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("platform JWKS %s: %w", url, err)
	}
	return set, nil
}
