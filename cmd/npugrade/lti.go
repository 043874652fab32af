package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/store"
)

const ltiUsage = `usage: npugrade lti platform add --issuer URL --client-id ID --deployment-id ID[,ID…] --auth-url URL --token-url URL --jwks-url URL [--audience AUD] [--name NAME] [--db URL]
       npugrade lti platform set ID [--deployment-id ID[,ID…]] [--auth-url URL] [--token-url URL] [--jwks-url URL] [--audience AUD] [--name NAME] [--db URL]
       npugrade lti platform list [--db URL]
       npugrade lti key rotate [--db URL]
       npugrade lti sync-roster [--context ID] [--db URL]

Register LMSs (Moodle, Canvas, Blackboard) as LTI 1.3 platforms and rotate
npugrade's signing key. serve offers the tool (--lti, on by default) once a
platform is registered; docs/lti.md has the values to paste in each LMS.

Run 'npugrade lti <subcommand> --help' for its flags.

environment:
  NPUGRADE_DB            database URL, the default of --db
`

func cmdLTI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	w := wordsOf(ctx)
	sub := strings.Join(args[:min(2, len(args))], " ")
	if len(args) > 0 && args[0] == "sync-roster" {
		sub = "sync-roster"
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, w.T("npugrade lti: missing subcommand (platform add, platform list or key rotate)")+"\n\n"+w.T(ltiUsage))
		return exitError
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprint(stdout, w.T(ltiUsage))
		return exitOK
	case sub != "platform add" && sub != "platform set" && sub != "platform list" && sub != "key rotate" && sub != "sync-roster":
		fmt.Fprint(stderr, w.F("npugrade lti: unknown subcommand %q\n\n", sub)+w.T(ltiUsage))
		return exitError
	}
	about := map[string]string{
		"platform add":  "Register an LMS as an LTI 1.3 platform (the values its tool registration shows) and print npugrade's values to paste there.",
		"platform set":  "Change a registration (ID from platform list): only the flags given change; the issuer and client id stay.",
		"platform list": "List the registered platforms.",
		"key rotate":    "Make a new signing key; the previous one stays in /lti/jwks for 7 days, so platforms that cached it keep verifying.",
		"sync-roster": "Read the roster of every linked course (or --context's) from its platform (NRPS) into its cohort: new people are\n" +
			"made by the roster import, everyone is linked to their platform user id and gets their course role; inactive members leave.",
	}[sub]
	fs := newCommand(ctx, "lti "+sub, "", about, envDB)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", ""), "database URL of the server: sqlite:///path/file.db, sqlite://relative.db or postgres://…")
	var p domain.LTIPlatform
	var deps, publicURL, contextID *string
	if sub == "sync-roster" {
		contextID = fs.String("context", "", "only the course with this platform context id (default: every linked course)")
	}
	if sub == "platform add" {
		fs.StringVar(&p.Issuer, "issuer", "", "the platform's issuer (Moodle: its site URL; Canvas: https://canvas.instructure.com)")
		fs.StringVar(&p.ClientID, "client-id", "", "npugrade's client id at the platform")
		publicURL = fs.String("public-url", envOr("NPUGRADE_PUBLIC_URL", ""), "npugrade's public URL, to print the values to paste in the LMS")
	}
	if sub == "platform add" || sub == "platform set" {
		fs.StringVar(&p.Name, "name", "", "a name for it (default the issuer)")
		deps = fs.String("deployment-id", "", "deployment ids whose launches are accepted, comma-separated")
		fs.StringVar(&p.AuthLoginURL, "auth-url", "", "the platform's authentication request URL (OIDC auth endpoint)")
		fs.StringVar(&p.TokenURL, "token-url", "", "the platform's access token URL (OAuth2 token endpoint)")
		fs.StringVar(&p.JWKSURL, "jwks-url", "", "the platform's public keyset URL")
		fs.StringVar(&p.Audience, "audience", "", "aud of npugrade's token requests when not the token URL (Canvas: https://canvas.instructure.com/login/oauth2/token)")
	}
	nArgs := 0
	if sub == "platform set" {
		fs.args, nArgs = "ID", 1
	}
	pos, code, ok := fs.parse(args[len(strings.Fields(sub)):], nArgs, nArgs, stdout, stderr)
	if !ok {
		return code
	}
	var setID int64
	if sub == "platform set" {
		var err error
		if setID, err = strconv.ParseInt(pos[0], 10, 64); err != nil || setID <= 0 {
			return fs.usageError(stderr, w.F("platform id %q: want the number platform list shows", pos[0]))
		}
	}
	if *dbURL == "" {
		return fs.usageError(stderr, w.T("no database: pass --db URL or set NPUGRADE_DB to the server's database"))
	}
	// Only add and rotate may set up a new database; the others need the server's.
	open := store.OpenExisting
	if sub == "platform add" || sub == "key rotate" {
		open = func(ctx context.Context, url string) (*store.DB, error) { return store.Open(ctx, url, nil) }
	}
	db, err := open(ctx, *dbURL)
	if err != nil {
		fmt.Fprintf(stderr, "npugrade lti %s: %s\n", sub, dbProblem(w, err))
		return exitError
	}
	defer db.Close()
	switch sub {
	case "platform add":
		p.DeploymentIDs = strings.Split(*deps, ",")
		return ltiPlatformAdd(ctx, db, p, *publicURL, w, stdout, stderr)
	case "platform set":
		return ltiPlatformSet(ctx, db, setID, fs, p, *deps, w, stdout, stderr)
	case "platform list":
		return ltiPlatformList(ctx, db, w, stdout, stderr)
	case "sync-roster":
		return ltiSyncRoster(ctx, db, *contextID, w, stdout, stderr)
	}
	kid, err := (&lti.Keys{DB: db}).Rotate(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade lti key rotate:", dbProblem(w, err))
		return exitError
	}
	if err := db.Audit(ctx, domain.User{}, domain.AuditLTIKeyRotated, kid, "npugrade lti key rotate"); err != nil {
		fmt.Fprintln(stderr, "npugrade lti:", w.T("warning:"), w.F("the audit log did not record it: %s", dbProblem(w, err)))
	}
	fmt.Fprint(stdout, w.F("new signing key %s; the previous key stays published for 7 days\n", kid))
	return exitOK
}

func ltiPlatformAdd(ctx context.Context, db *store.DB, p domain.LTIPlatform, publicURL string, w words, stdout, stderr io.Writer) int {
	got, err := (&lti.Platforms{DB: db}).Add(ctx, p)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade lti platform add:", dbProblem(w, err))
		for _, pr := range domain.ErrorProblems(err) {
			fmt.Fprintln(stderr, "  "+w.Problem(pr))
		}
		return exitError
	}
	if err := db.Audit(ctx, domain.User{}, domain.AuditLTIPlatformAdded, got.Issuer, "client id "+got.ClientID+" (npugrade lti platform add)"); err != nil {
		fmt.Fprintln(stderr, "npugrade lti:", w.T("warning:"), w.F("the audit log did not record it: %s", dbProblem(w, err)))
	}
	fmt.Fprint(stdout, w.F("registered platform %d %q (%s, client id %s)\n", got.ID, got.Name, got.Issuer, got.ClientID))
	base := strings.TrimRight(publicURL, "/")
	if base == "" {
		base = "https://YOUR-NPUGRADE"
	}
	fmt.Fprint(stdout, w.F("values for the LMS (restart serve with --public-url %s to serve them):\n", base))
	fmt.Fprint(stdout, w.F("  tool URL / target link URI:   %s/lti/launch\n", base))
	fmt.Fprint(stdout, w.F("  initiate login URL:           %s/lti/login\n", base))
	fmt.Fprint(stdout, w.F("  redirection URI(s):           %s/lti/launch\n", base))
	fmt.Fprint(stdout, w.F("  public keyset URL (JWKS):     %s/lti/jwks\n", base))
	fmt.Fprint(stdout, w.F("  deep linking (content selection) URL: %s/lti/launch\n", base))
	return exitOK
}

func ltiPlatformList(ctx context.Context, db *store.DB, w words, stdout, stderr io.Writer) int {
	ps, err := db.LTIPlatforms(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade lti platform list:", dbProblem(w, err))
		return exitError
	}
	for _, p := range ps {
		fmt.Fprintf(stdout, "%d\t%s\t%s\t%s %s\t%s %s\n", p.ID, p.Name, p.Issuer, w.T("client"), p.ClientID, w.T("deployments"), strings.Join(p.DeploymentIDs, ","))
	}
	return exitOK
}

func ltiSyncRoster(ctx context.Context, db *store.DB, contextID string, w words, stdout, stderr io.Writer) int {
	contexts, err := db.LTIContexts(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade lti sync-roster:", dbProblem(w, err))
		return exitError
	}
	roster := &lti.Roster{DB: db, Sender: &lti.Sender{DB: db, Keys: &lti.Keys{DB: db}}}
	code, seen := exitOK, 0
	for _, lc := range contexts {
		if contextID != "" && lc.ContextID != contextID {
			continue
		}
		seen++
		res, err := roster.Sync(ctx, lc.ID)
		if err != nil {
			fmt.Fprint(stderr, "npugrade lti sync-roster: ", w.F("course %q: %s\n", lc.Title, dbProblem(w, err)))
			if domain.ErrorCode(err) == domain.EINTERNAL {
				fmt.Fprintln(stderr, "  ", err)
			}
			code = exitError
			continue
		}
		fmt.Fprint(stdout, w.F("course %q: %s (%s), %s, %s\n", lc.Title, w.N("n.members", res.Members), w.N("n.new_users", res.Created),
			w.N("n.removed", res.Removed), w.N("n.skipped", len(res.Skipped))))
		for _, s := range res.Skipped {
			fmt.Fprintln(stdout, "  "+w.T("skipped")+" "+s)
		}
	}
	if seen == 0 {
		if contextID != "" {
			fmt.Fprint(stderr, "npugrade lti sync-roster: ", w.F("no linked course %q (an instructor's launch links one)\n", contextID))
		} else {
			fmt.Fprint(stderr, "npugrade lti sync-roster: ", w.T("no linked course (an instructor's launch links one)\n"))
		}
		return exitError
	}
	return code
}

// ltiPlatformSet changes the fields of registration id whose flags were given.
func ltiPlatformSet(ctx context.Context, db *store.DB, id int64, fs *command, v domain.LTIPlatform, deps string, w words, stdout, stderr io.Writer) int {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	got, err := (&lti.Platforms{DB: db}).Set(ctx, id, func(p *domain.LTIPlatform) {
		for name, apply := range map[string]func(){
			"name": func() { p.Name = v.Name }, "deployment-id": func() { p.DeploymentIDs = strings.Split(deps, ",") },
			"auth-url": func() { p.AuthLoginURL = v.AuthLoginURL }, "token-url": func() { p.TokenURL = v.TokenURL },
			"jwks-url": func() { p.JWKSURL = v.JWKSURL }, "audience": func() { p.Audience = v.Audience },
		} {
			if set[name] {
				apply()
			}
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "npugrade lti platform set:", dbProblem(w, err))
		for _, pr := range domain.ErrorProblems(err) {
			fmt.Fprintln(stderr, "  "+w.Problem(pr))
		}
		return exitError
	}
	if err := db.Audit(ctx, domain.User{}, domain.AuditLTIPlatformAdded, got.Issuer, "changed (npugrade lti platform set)"); err != nil {
		fmt.Fprintln(stderr, "npugrade lti:", w.T("warning:"), w.F("the audit log did not record it: %s", dbProblem(w, err)))
	}
	fmt.Fprint(stdout, w.F("platform %d %q: deployments %s, token URL %s, audience %q\n", got.ID, got.Name, strings.Join(got.DeploymentIDs, ","), got.TokenURL, got.Audience))
	return exitOK
}
