-- A user signed in through JupyterHub or an OpenID provider is found by
-- the provider's issuer and stable subject, not by the login name it
-- sends, so a renamed claim or login never makes a second user.
CREATE TABLE external_identities (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at DATETIME NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX external_identities_user ON external_identities (user_id);
-- A sign-in under way at an outside provider: its state (hashed), what
-- the callback needs back (PKCE verifier, nonce, the page to return to).
-- In the database, not in memory, so the callback may reach any of the
-- servers sharing it; taken once.
CREATE TABLE login_states (
    state_hash TEXT PRIMARY KEY,
    data       TEXT NOT NULL,
    expires_at DATETIME NOT NULL
);
