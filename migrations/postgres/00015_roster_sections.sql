-- Rosters and sections (issue 18): a user's full name and section, as a
-- roster import sets them. The user's name stays the unique login name
-- (a roster's student number or email).
ALTER TABLE users ADD COLUMN full_name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN section TEXT NOT NULL DEFAULT '';
CREATE INDEX users_section ON users(section, name);
