-- LTI 1.3: the platforms (LMSs) registered by an admin, npugrade's own
-- signing keys, the launches' nonces, the LMS courses (contexts) linked
-- to cohorts, their AGS line items and the scores owed to them.
CREATE TABLE lti_platforms (
    id             BIGSERIAL PRIMARY KEY,
    name           TEXT NOT NULL,
    issuer         TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    deployment_ids TEXT NOT NULL,   -- JSON list of strings
    auth_login_url TEXT NOT NULL,
    token_url      TEXT NOT NULL,
    jwks_url       TEXT NOT NULL,
    -- The aud of the client assertion when it is not token_url (Canvas:
    -- https://canvas.instructure.com/login/oauth2/token's issuer).
    audience       TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (issuer, client_id)
);
-- Private keys never leave the server; a retired key stays published in
-- /lti/jwks for a while so that tokens signed just before a rotation verify.
CREATE TABLE lti_keys (
    kid         TEXT PRIMARY KEY,
    private_pem TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    retired_at  TIMESTAMPTZ
);
-- Each launch's nonce, hashed: a replayed id_token is refused on any server.
CREATE TABLE lti_nonces (
    nonce_hash TEXT PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);
-- An LMS course (platform, context id) and the cohort it is taught in.
-- cohort_id names a row of cohorts (migration 00029); it is no foreign
-- key so that 00029 stays undoable on its own (its backfill test drops
-- and re-applies it).
CREATE TABLE lti_contexts (
    id              BIGSERIAL PRIMARY KEY,
    platform_id     BIGINT NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    context_id      TEXT NOT NULL,
    title           TEXT NOT NULL DEFAULT '',
    cohort_id       BIGINT NOT NULL,
    lineitems_url   TEXT NOT NULL DEFAULT '',
    memberships_url TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (platform_id, context_id)
);
CREATE INDEX lti_contexts_cohort ON lti_contexts (cohort_id);
-- One AGS line item per exercise of a context. A row with no url yet is
-- a server creating it (claimed_at): the others wait for it, or take over
-- when that claim is a minute old (the server died), so that servers
-- sending at once never make two line items of one exercise.
CREATE TABLE lti_line_items (
    context_pk  BIGINT NOT NULL REFERENCES lti_contexts(id) ON DELETE CASCADE,
    exercise_id TEXT NOT NULL,
    url         TEXT NOT NULL DEFAULT '',
    claimed_at  TIMESTAMPTZ,
    PRIMARY KEY (context_pk, exercise_id)
);
-- The score a learner's line item should show (want_*, bumped to a new
-- version when the counted score changes) and the last one the platform
-- accepted (sent_version): a row is due while sent_version < version.
-- Senders on any server lease a due row by compare-and-swap on not_before.
CREATE TABLE lti_scores (
    context_pk      BIGINT NOT NULL REFERENCES lti_contexts(id) ON DELETE CASCADE,
    exercise_id     TEXT NOT NULL,
    user_id         BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    score           DOUBLE PRECISION NOT NULL,
    max_score       DOUBLE PRECISION NOT NULL,
    progress        TEXT NOT NULL,
    submission_id   TEXT NOT NULL,
    scored_at       TIMESTAMPTZ NOT NULL,
    version         BIGINT NOT NULL,
    sent_version    BIGINT NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    not_before      TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ,
    PRIMARY KEY (context_pk, exercise_id, user_id)
);
CREATE INDEX lti_scores_due ON lti_scores (not_before) WHERE sent_version < version;
