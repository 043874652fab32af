package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// envVar documents one environment variable a command reads; every command
// lists its own in --help, and docs/cli.md lists them all.
type envVar struct{ name, help string }

var (
	envDB            = envVar{"NPUGRADE_DB", "database URL, the default of --db"}
	envAddr          = envVar{"NPUGRADE_ADDR", "listen address, the default of --addr"}
	envSandbox       = envVar{"NPUGRADE_SANDBOX", "kernel isolation, the default of --sandbox (bwrap or none)"}
	envMetricsToken  = envVar{"NPUGRADE_METRICS_TOKEN", "bearer token for /metrics on the main listener, the default of --metrics-token"}
	envTrusted       = envVar{"NPUGRADE_TRUSTED_PROXIES", "reverse proxies whose X-Forwarded-For names the client, the default of --trusted-proxies"}
	envPublicURL     = envVar{"NPUGRADE_PUBLIC_URL", "the server's URL as users reach it, the default of --public-url"}
	envServer        = envVar{"NPUGRADE_SERVER", "server URL, the default of --server"}
	envToken         = envVar{"NPUGRADE_TOKEN", "API token, the default of --token"}
	envRunnerToken   = envVar{"NPUGRADE_RUNNER_TOKEN", "runner token, the default of --token"}
	envGitHub        = envVar{"GITHUB_ACTIONS", "when \"true\", also print GitHub Actions annotations"}
	envGitHubSummary = envVar{"GITHUB_STEP_SUMMARY", "when set, append a Markdown summary to this file"}
)

// command is one command's strict command line: flags and positional
// arguments in any order, every unknown flag, stray word or invalid value
// an error with the usage (exit 2), --help the usage on stdout (exit 0).
// It keeps the standard library's FlagSet, so flags are declared as usual.
type command struct {
	*flag.FlagSet
	name  string // "serve", "user add"
	args  string // positional synopsis, e.g. "NAME" or "FILE.ipynb"
	about string
	env   []envVar
	// lang is --lang, every command's: the language of its messages and
	// of the server's (Accept-Language).
	lang *string
	// ctxLang is the language of the run, for the messages of a command
	// line whose --lang names neither.
	ctxLang string
}

// newCommand declares a command; its usage, flag help and messages are in
// ctx's language (see words) and about, flag usages and env help are
// looked up by their English when printed.
func newCommand(ctx context.Context, name, args, about string, env ...envVar) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parse prints errors and usage itself, to the right stream.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c := &command{FlagSet: fs, name: name, args: args, about: about, env: env, ctxLang: langOf(ctx)}
	c.lang = fs.String("lang", langOf(ctx), langHelp)
	return c
}

// words says the command's messages in its --lang.
func (c *command) words() words {
	if *c.lang == langZH || *c.lang == langEN {
		return words{*c.lang}
	}
	return words{c.ctxLang}
}

// printUsage writes the synopsis, flags and environment variables.
func (c *command) printUsage(w io.Writer) {
	say := c.words()
	synopsis := "npugrade " + c.name + " " + say.T("[flags]")
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(w, say.T("usage: %s\n\n%s\n"), synopsis, say.T(c.about))
	first := true
	c.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, say.T("\nflags:"))
			first = false
		}
		shown := *f
		shown.Usage = say.T(f.Usage)
		_, text := flag.UnquoteUsage(&shown) // "a `FILE`" names the value and reads "a FILE"
		fmt.Fprintf(w, "  --%s%s\n    \t%s", f.Name, flagType(f), text)
		if def := shownDefault(f); def != "" {
			fmt.Fprint(w, say.F(" (default %s)", say.T(def)))
		}
		fmt.Fprintln(w)
	})
	if len(c.env) > 0 {
		fmt.Fprintln(w, say.T("\nenvironment:"))
		for _, e := range c.env {
			fmt.Fprintf(w, "  %-22s %s\n", e.name, say.T(e.help))
		}
	}
}

// flagType names a flag's value in the usage (" int", " a|b|c"); boolean
// flags have none.
func flagType(f *flag.Flag) string {
	switch v := f.Value.(type) {
	case choice:
		return " " + strings.Join(v.choices, "|")
	case intMin, int64Min:
		return " int"
	case durationMin:
		return " duration"
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	name, _ := flag.UnquoteUsage(f)
	if name == "" {
		return ""
	}
	return " " + name
}

// shownDefault is the default --help shows: none for zero values, and
// never a secret that came from the environment (a token, a database
// password).
func shownDefault(f *flag.Flag) string {
	switch def := f.DefValue; {
	case def == "" || def == "false" || def == "0" || def == "0s":
		return ""
	case f.Name == "token":
		return "hidden, from the environment"
	default:
		if u, err := url.Parse(def); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
				return u.String()
			}
		}
		return def
	}
}

// usageError prints every problem and the usage to stderr and returns the
// exit status for a mistaken command line.
func (c *command) usageError(stderr io.Writer, problems ...string) int {
	for _, p := range problems {
		fmt.Fprintf(stderr, "npugrade %s: %s\n", c.name, p)
	}
	fmt.Fprintln(stderr)
	c.printUsage(stderr)
	return exitError
}

// parse parses args, allowing flags after positional arguments ("--" ends
// the flags), and checks that there are between minArgs and maxArgs
// positional arguments. When ok is false the command must return code:
// 0 after --help, 2 after a mistake.
func (c *command) parse(args []string, minArgs, maxArgs int, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		err := c.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout)
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.usageError(stderr, c.words().flagProblem(err)), false
		}
		rest := c.Args()
		if len(rest) == 0 {
			break
		}
		// Parse stops at the first non-flag; "--" before it means the rest
		// are all positional.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	say := c.words()
	switch {
	case *c.lang != langZH && *c.lang != langEN:
		return nil, c.usageError(stderr, say.F("--lang: %q is not zh-CN or en", *c.lang)), false
	case len(pos) > maxArgs && maxArgs == 0:
		return nil, c.usageError(stderr, say.F("unexpected argument %q: this command takes only flags", pos[0])), false
	case len(pos) > maxArgs:
		return nil, c.usageError(stderr, say.F("unexpected argument %q: at most %d expected (%s)", pos[maxArgs], maxArgs, c.args)), false
	case len(pos) < minArgs:
		return nil, c.usageError(stderr, say.F("missing argument %s", c.args)), false
	}
	return pos, exitOK, true
}

// intMin is an int flag that refuses values below min.
type intMin struct {
	p   *int
	min int
}

func (v intMin) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intMin) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < v.min {
		return fmt.Errorf("must be at least %d", v.min)
	}
	*v.p = n
	return nil
}

// IntMin defines an int flag whose values below min are refused.
func (c *command) IntMin(name string, def, min int, usage string) *int {
	p := new(int)
	*p = def
	c.Var(intMin{p, min}, name, usage)
	return p
}

// int64Min is an int64 flag that refuses values below min.
type int64Min struct {
	p   *int64
	min int64
}

func (v int64Min) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v int64Min) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < v.min {
		return fmt.Errorf("must be at least %d", v.min)
	}
	*v.p = n
	return nil
}

// Int64Min defines an int64 flag whose values below min are refused.
func (c *command) Int64Min(name string, def, min int64, usage string) *int64 {
	p := new(int64)
	*p = def
	c.Var(int64Min{p, min}, name, usage)
	return p
}

// durationMin is a duration flag that refuses values below min.
type durationMin struct {
	p   *time.Duration
	min time.Duration
}

func (v durationMin) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v durationMin) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration such as 90s or 5m")
	}
	if d < v.min {
		return fmt.Errorf("must be at least %s", v.min)
	}
	*v.p = d
	return nil
}

// DurationMin defines a duration flag whose values below min are refused.
func (c *command) DurationMin(name string, def, min time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	c.Var(durationMin{p, min}, name, usage)
	return p
}

// choice is a string flag restricted to a few values.
type choice struct {
	p       *string
	choices []string
}

func (v choice) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v choice) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want one of %s", strings.Join(v.choices, ", "))
	}
	*v.p = s
	return nil
}

// Choice defines a string flag that accepts only the given values.
func (c *command) Choice(name, def string, choices []string, usage string) *string {
	p := new(string)
	*p = def
	c.Var(choice{p, choices}, name, usage)
	return p
}

// LogLevel defines --log-level (debug, info, warn or error).
func (c *command) LogLevel() *string {
	return c.Choice("log-level", "info", []string{"debug", "info", "warn", "error"}, "log level: debug, info, warn or error")
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo // LogLevel already refused anything else
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: durationSeconds}))
}

// durationSeconds writes every time.Duration in a log line as seconds (a
// float), not the nanoseconds slog's JSON handler would write.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	}
	return a
}

// serverURL checks a --server value: an http:// or https:// URL with a
// host. It returns it without trailing slashes. A value without a scheme
// ("127.0.0.1:8080", which used to crash submit) is refused with the URL
// it probably meant, never guessed: a server behind TLS must not be
// reached in the clear by accident.
func serverURL(say words, s string) (string, error) {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return strings.TrimRight(s, "/"), nil
	}
	if !strings.Contains(s, "://") {
		return "", say.Errorf("--server %q is not a URL: give its scheme, e.g. --server http://%s", s, strings.TrimLeft(s, "/"))
	}
	return "", say.Errorf("--server %q must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080", s)
}
