package main

import (
	"errors"
	"net/url"

	"github.com/npugrade/npugrade/internal/sso"
)

var (
	envHubSecret  = envVar{"NPUGRADE_JUPYTERHUB_CLIENT_SECRET", "npugrade's OAuth client secret at the JupyterHub, the default of --jupyterhub-client-secret"}
	envOIDCSecret = envVar{"NPUGRADE_OIDC_CLIENT_SECRET", "npugrade's OpenID Connect client secret, the default of --oidc-client-secret"}
)

// hubFlags declares the JupyterHub sign-in flags; the function it
// returns builds the hub (nil when --jupyterhub-url is not given). The
// secret is never printed, not even in --help's defaults.
func hubFlags(fs *command) func() (*sso.Hub, error) {
	hubURL := fs.String("jupyterhub-url", "", "public URL of a JupyterHub whose users may sign in (e.g. http://127.0.0.1:8000; default: none)")
	id := fs.String("jupyterhub-client-id", "", "npugrade's OAuth client id at the hub (the service's oauth_client_id, e.g. service-npugrade)")
	secret := fs.String("jupyterhub-client-secret", "", "npugrade's OAuth client secret at the hub (the service's api_token; default $NPUGRADE_JUPYTERHUB_CLIENT_SECRET)")
	group := fs.String("jupyterhub-instructor-group", "instructors", "hub group whose members sign in as instructors")
	return func() (*sso.Hub, error) {
		w := fs.words()
		if *hubURL == "" {
			return nil, nil
		}
		u, err := url.Parse(*hubURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, w.Errorf("--jupyterhub-url %q: want http(s)://HOST[:PORT]", *hubURL)
		}
		s := *secret
		if s == "" {
			s = envOr(envHubSecret.name, "")
		}
		return &sso.Hub{URL: *hubURL, ClientID: *id, ClientSecret: s, InstructorGroup: *group}, nil
	}
}

// oidcFlags declares the OpenID Connect sign-in flags; the function it
// returns builds the provider (nil when --oidc-issuer is not given).
func oidcFlags(fs *command) func() (*sso.OIDC, error) {
	issuer := fs.String("oidc-issuer", "", "issuer URL of an OpenID provider whose users may sign in to the pages (default: none)")
	id := fs.String("oidc-client-id", "", "npugrade's client id at the OpenID provider")
	secret := fs.String("oidc-client-secret", "", "npugrade's client secret at the OpenID provider (default $NPUGRADE_OIDC_CLIENT_SECRET)")
	login := fs.String("oidc-login-claim", "preferred_username", "id_token claim that is the npugrade user name")
	roles := fs.String("oidc-roles-claim", "groups", "id_token claim listing the user's roles or groups")
	instr := fs.String("oidc-instructor-value", "instructor", "entry of the roles claim that signs in as an instructor")
	return func() (*sso.OIDC, error) {
		w := fs.words()
		if *issuer == "" {
			return nil, nil
		}
		if u, err := url.Parse(*issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, w.Errorf("--oidc-issuer %q: want http(s)://HOST[/PATH]", *issuer)
		}
		if *id == "" {
			return nil, errors.New(w.T("--oidc-issuer needs --oidc-client-id"))
		}
		s := *secret
		if s == "" {
			s = envOr(envOIDCSecret.name, "")
		}
		return &sso.OIDC{Issuer: *issuer, ClientID: *id, ClientSecret: s, LoginClaim: *login, RolesClaim: *roles, InstructorValue: *instr}, nil
	}
}
