-- Browser sessions of the web pages (internal/web). Only a hash of the
-- session id is stored, as for API tokens: a leaked database holds no
-- usable cookie. The CSRF token is per session and sent in every form.
CREATE TABLE web_sessions (
    id_hash     TEXT PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token  TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    expires_at  DATETIME NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions(user_id);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
