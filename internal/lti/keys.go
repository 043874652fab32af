// Package lti is npugrade as an LTI 1.3 tool (IMS LTI 1.3 Core, LTI
// Advantage AGS, NRPS and Deep Linking 2.0): the platforms an admin
// registers, npugrade's own signing keys and JWKS, the OIDC login and the
// launch with every check of its id_token, the cohort a course (context)
// is taught in, Deep Linking responses, and grade passback through AGS
// from the outbox. It takes and returns plain values: the browser flows
// are internal/web's, the SQL internal/store's.
package lti

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/npugrade/npugrade/internal/domain"
)

// KeyStore keeps npugrade's signing keys (store.DB).
type KeyStore interface {
	RotateLTIKey(ctx context.Context, k domain.LTIKey) error
	LTIKeys(ctx context.Context, since time.Time) ([]domain.LTIKey, error)
	Now() time.Time
}

// DefaultRetain is how long a retired key stays in /lti/jwks: platforms
// cache a tool's JWKS, and a token signed just before a rotation must
// still verify.
const DefaultRetain = 7 * 24 * time.Hour

// Keys signs npugrade's messages (client assertions, Deep Linking
// responses) with the newest key in the database and publishes the
// public halves.
type Keys struct {
	DB KeyStore
	// Retain is how long a retired key is still published (DefaultRetain).
	Retain time.Duration
}

// Rotate makes a new RSA key the signing key; the previous one stays
// published for Retain. It returns the new key's id.
func (k *Keys) Rotate(ctx context.Context) (string, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("generate LTI key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("encode LTI key: %w", err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	sum := sha256.Sum256(pub)
	kid := hex.EncodeToString(sum[:12])
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err := k.DB.RotateLTIKey(ctx, domain.LTIKey{KID: kid, PrivatePEM: pemText}); err != nil {
		return "", err
	}
	return kid, nil
}

func (k *Keys) published(ctx context.Context) ([]domain.LTIKey, error) {
	retain := k.Retain
	if retain <= 0 {
		retain = DefaultRetain
	}
	keys, err := k.DB.LTIKeys(ctx, k.DB.Now().Add(-retain))
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || keys[0].RetiredAt != nil {
		// The first use makes the first key (no step to forget at set-up).
		if _, err := k.Rotate(ctx); err != nil {
			return nil, err
		}
		return k.DB.LTIKeys(ctx, k.DB.Now().Add(-retain))
	}
	return keys, nil
}

func parseKey(k domain.LTIKey) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode([]byte(k.PrivatePEM))
	if b == nil {
		return nil, fmt.Errorf("LTI key %s: not PEM", k.KID)
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("LTI key %s: %w", k.KID, err)
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("LTI key %s: not RSA", k.KID)
	}
	return rk, nil
}

// JWKS is the JSON Web Key Set of the published keys (public halves only).
func (k *Keys) JWKS(ctx context.Context) ([]byte, error) {
	keys, err := k.published(ctx)
	if err != nil {
		return nil, err
	}
	set := jose.JSONWebKeySet{}
	for _, dk := range keys {
		priv, err := parseKey(dk)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: dk.KID, Algorithm: string(jose.RS256), Use: "sig"})
	}
	return json.Marshal(set)
}

// Sign signs claims with the signing key (RS256, its kid in the header).
func (k *Keys) Sign(ctx context.Context, claims any) (string, error) {
	keys, err := k.published(ctx)
	if err != nil {
		return "", err
	}
	priv, err := parseKey(keys[0])
	if err != nil {
		return "", err
	}
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", keys[0].KID)
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: priv}, opts)
	if err != nil {
		return "", fmt.Errorf("LTI signer: %w", err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return tok, nil
}
