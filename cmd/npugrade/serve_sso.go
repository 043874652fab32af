package main

import (
	"fmt"
	"net/url"

	"github.com/npugrade/npugrade/internal/sso"
)

var (
	envHubSecret = envVar{"NPUGRADE_JUPYTERHUB_CLIENT_SECRET", "npugrade's OAuth client secret at the JupyterHub, the default of --jupyterhub-client-secret"}
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
		if *hubURL == "" {
			return nil, nil
		}
		u, err := url.Parse(*hubURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--jupyterhub-url %q: want http(s)://HOST[:PORT]", *hubURL)
		}
		s := *secret
		if s == "" {
			s = envOr(envHubSecret.name, "")
		}
		return &sso.Hub{URL: *hubURL, ClientID: *id, ClientSecret: s, InstructorGroup: *group}, nil
	}
}
