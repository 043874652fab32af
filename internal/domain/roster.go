package domain

// RosterEntry is one person of a class roster: Name is the
// unique login name (a student number or email), FullName and Section
// what the roster says.
type RosterEntry struct {
	Name     string
	FullName string
	Section  string
	Role     Role
	// Cohort is the slug of the cohort a learner or instructor joins
	// ("": a new user joins the default cohort, an existing one keeps
	// theirs).
	Cohort string
	// KeepFullName, KeepSection and KeepRole leave an existing user's
	// value as it is: the roster has no such column (a file without a
	// section column must not clear everyone's section).
	KeepFullName, KeepSection, KeepRole bool
}

// RosterResult is what a roster import did. Created carries each new
// user's first token, which exists nowhere else (only its hash is stored).
type RosterResult struct {
	Created   []RosterToken
	Updated   []string
	Unchanged int
}

// RosterToken is a new user with their token.
type RosterToken struct {
	RosterEntry
	Token string
}
