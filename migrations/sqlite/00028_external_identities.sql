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
