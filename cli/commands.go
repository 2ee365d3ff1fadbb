package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes of the client commands; scripts may rely on them.
const (
	ExitOK          = 0 // done
	ExitOther       = 1 // usage error, unreadable input, or any other error
	ExitRejected    = 2 // the API rejected a request (4xx); its message is printed
	ExitFailed      = 3 // a service failed to provision (or status found one failed); its provisioningError is printed
	ExitTimeout     = 4 // --wait gave up after --timeout
	ExitUnreachable = 5 // no answer from the server
	ExitNoWorker    = 6 // status: no worker polls the task queue, so nothing is provisioned
)

// exitCodesHelp is appended to the help of every client command.
const exitCodesHelp = `

Exit codes:
  0  done
  1  usage error, unreadable input, or another error
  2  the API rejected a request (4xx); the API's message is printed
  3  a service failed to provision (--wait), or status found a failed service;
     its provisioningError is printed
  4  --wait gave up after --timeout
  5  the server could not be reached
  6  status: no worker polls the task queue (services stay pending)
When several things fail, the highest code wins.`

const connectionHelp = `
The server is --server, else $SVCBRIDGE_SERVER, else the context's (--context, else
the current context of the configuration file $XDG_CONFIG_HOME/svcbridge/config,
default ~/.config/svcbridge/config, which 'svcbridge login' and 'svcbridge dev'
write), else http://127.0.0.1:8080. The bearer token is --token, else
$SVCBRIDGE_TOKEN, else the context's (sent to the context's server only), else the
file admin.token in the data directory (--data-dir / $DATA_DIR, default ./.svcbridge)
when it exists.`

// DefaultServer is the API 'svcbridge dev' serves.
const DefaultServer = "http://127.0.0.1:8080"

// Options configure Commands.
type Options struct {
	// Embedded starts an in-process svcbridge (store, Temporal, worker,
	// API on loopback) for `bench` without --server. Nil: bench needs
	// --server.
	Embedded func(ctx context.Context, cmd *cobra.Command) (Embedded, error)
	// Exit ends the process with codes 2 and up (default os.Exit); a
	// code 1 error is returned to cobra's caller, which exits 1.
	Exit func(code int)
}

// Embedded is a running in-process svcbridge.
type Embedded struct {
	Server string // base URL of its API
	Token  string // API token, when it requires one
	Stop   func()
}

// Commands returns the client commands for the root command: apply, get,
// describe, delete, reconcile, status, bench, login, version, diff,
// preview, events, config and import.
func Commands(o Options) []*cobra.Command {
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	return []*cobra.Command{
		applyCmd(o), getCmd(o), describeCmd(o), deleteCmd(o), reconcileCmd(o), statusCmd(o), benchCmd(o), loginCmd(o), versionCmd(o),
		diffCmd(o), previewCmd(o), eventsCmd(o), configCmd(o), importCmd(o), rotateTokenCmd(o),
	}
}

// ---- errors and exit codes ----

// ExitError carries an exit code for err.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// FailedError is a service whose reconcile failed.
type FailedError struct {
	Service, Message string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("service %s failed: %s", e.Service, e.Message)
}

// TimeoutError is a --wait that gave up.
type TimeoutError struct {
	After time.Duration
	State string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s; %s", e.After, e.State)
}

// ExitCode is the exit code for err (see the constants).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	var ue *UnreachableError
	var ae *APIError
	var fe *FailedError
	var te *TimeoutError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ue):
		return ExitUnreachable
	case errors.As(err, &te):
		return ExitTimeout
	case errors.As(err, &fe):
		return ExitFailed
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500:
		return ExitRejected
	}
	return ExitOther
}

// multiError joins errors; its exit code is the highest of theirs.
type multiError []error

func (m multiError) Error() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// join returns nil, the one error, or a multiError with the highest code.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	code := 0
	for _, e := range errs {
		code = max(code, ExitCode(e))
	}
	return &ExitError{Code: code, Err: multiError(errs)}
}

// PrintErrors prints "error: ..." for each error joined in err: kubectl's
// prefix, the one every svcbridge error is printed with.
func PrintErrors(w io.Writer, err error) {
	var m multiError
	if errors.As(err, &m) {
		for _, e := range m {
			fmt.Fprintln(w, "error:", e)
		}
		return
	}
	fmt.Fprintln(w, "error:", err)
}

// reported is an error whose message was printed already, line by line.
type reported struct {
	code int
	msg  string
}

func (r *reported) Error() string { return r.msg }

// run adapts a command function: an error with code 2 and up is printed
// and ends the process with that code; a code 1 error goes back to cobra's
// caller (which prints it and exits 1).
func run(o Options, f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		code := ExitCode(err)
		var r *reported
		if errors.As(err, &r) {
			code = r.code
		}
		if code <= ExitOther && r == nil {
			return err
		}
		if r == nil {
			PrintErrors(cmd.ErrOrStderr(), err)
		}
		if code <= ExitOther {
			code = ExitOther
		}
		o.Exit(code)
		return err // Exit returned: a test
	}
}

// ---- connection flags ----

// conn holds the flags every client command has.
type conn struct {
	server, token, context string
}

func (c *conn) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.server, "server", "", "svcbridge API URL (env SVCBRIDGE_SERVER; default: the context's, else "+DefaultServer+")")
	cmd.Flags().StringVar(&c.token, "token", "", "bearer token for the API (env SVCBRIDGE_TOKEN; default: the context's, else <data-dir>/admin.token)")
	cmd.Flags().StringVar(&c.context, "context", "", "context of the configuration file to use (default: its current context)")
	cmd.Flags().String("data-dir", "", "a local dev's data directory, whose admin.token is used when no token is given (env DATA_DIR; default ./.svcbridge)")
}

// client builds the API client from the flags, the environment and the
// configuration file (see settings.resolve).
func (c *conn) client(cmd *cobra.Command) (*Client, error) {
	s := settings{flagServer: c.server, flagToken: c.token, envServer: os.Getenv("SVCBRIDGE_SERVER"),
		envToken: strings.TrimSpace(os.Getenv("SVCBRIDGE_TOKEN")), configPath: ConfigPath(),
		contextName: c.context, contextExplicit: c.context != "",
		dataDirPath: filepath.Join(dataDir(cmd), "admin.token")}
	var err error
	if s.config, err = LoadConfig(s.configPath); err != nil {
		return nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("configuration file: %w", err)}
	}
	if s.contextName == "" {
		s.contextName = s.config.CurrentContext
	}
	if b, err := os.ReadFile(s.dataDirPath); err == nil {
		s.dataDirToken = strings.TrimSpace(string(b))
	}
	conn, err := s.resolve()
	if err != nil {
		return nil, err
	}
	return &Client{Server: conn.server, Token: conn.token, HTTP: &http.Client{Timeout: 30 * time.Second},
		Warnings: cmd.ErrOrStderr(), unauthorized: conn.unauthorizedHint(), Context: conn.context}, nil
}

// normalizeServer accepts host:port and a URL; it returns a URL without a
// trailing slash.
func normalizeServer(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return "", &ExitError{Code: ExitOther, Err: fmt.Errorf("invalid --server %q: want http://host:port or https://host:port", s)}
	}
	return strings.TrimRight(s, "/"), nil
}

// dataDir is the command's --data-dir when given, else $DATA_DIR,
// else ./.svcbridge.
func dataDir(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("data-dir"); f != nil && f.Changed {
		return f.Value.String()
	}
	if d := os.Getenv("DATA_DIR"); d != "" {
		return d
	}
	return ".svcbridge"
}

// ---- wait flags ----

// waitFlags are --wait[=ready|rollout] and --timeout.
type waitFlags struct {
	wait bool
	// rollout (--wait=rollout): past ready, until the router of every
	// agent the service selects holds its listener (and no other still
	// does).
	rollout        bool
	rolloutAllowed bool
	timeout        time.Duration
}

// flags adds --wait (--wait=rollout too, with rollout).
func (w *waitFlags) flags(cmd *cobra.Command, what string, rollout bool) {
	w.rolloutAllowed = rollout
	f := cmd.Flags().VarPF((*waitValue)(w), "wait", "", what)
	f.NoOptDefVal = "ready"
	cmd.Flags().DurationVar(&w.timeout, "timeout", 2*time.Minute, "how long --wait waits (a Go duration such as 60s)")
}

// waiter is a waiter that follows these flags.
func (w *waitFlags) waiter(cmd *cobra.Command, c *Client) *waiter {
	p := progressWriter(cmd)
	return &waiter{c: c, out: cmd.OutOrStdout(), progress: p, width: terminalWidth(p), rollout: w.rollout}
}

// waitValue is --wait's value: ready (the flag alone, or true), rollout,
// or none (false).
type waitValue waitFlags

func (v *waitValue) String() string {
	switch {
	case v.rollout:
		return "rollout"
	case v.wait:
		return "ready"
	}
	return "none"
}

func (v *waitValue) Set(s string) error {
	switch s {
	case "ready", "true":
		v.wait, v.rollout = true, false
	case "rollout":
		if !v.rolloutAllowed {
			return errors.New("want ready (nothing rolls out here)")
		}
		v.wait, v.rollout = true, true
	case "none", "false":
		v.wait, v.rollout = false, false
	default:
		return errors.New("want ready, rollout or none")
	}
	return nil
}

func (v *waitValue) Type() string { return "ready|rollout" }

// ---- dry run ----

// dryRunFlag is --dry-run, as kubectl's: none (write), or server or
// client (the server checks each write and answers what it would do,
// storing nothing). The flag alone is client, as in kubectl.
type dryRunFlag struct{ value string }

func (d *dryRunFlag) flags(cmd *cobra.Command) {
	f := cmd.Flags().VarPF((*dryRunValue)(&d.value), "dry-run", "", `"server" (or the flag alone, "client"): send every write with ?dryRun=true (checked and answered, nothing stored); "none": write`)
	f.NoOptDefVal = "client"
	cmd.RegisterFlagCompletionFunc("dry-run", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"none", "server", "client"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// dryRunValue is --dry-run's value, checked as it is set.
type dryRunValue string

func (v *dryRunValue) String() string {
	if *v == "" {
		return "none"
	}
	return string(*v)
}

func (v *dryRunValue) Set(s string) error {
	switch s {
	case "none", "server", "client":
		*v = dryRunValue(s)
		return nil
	}
	return errors.New("want none, server or client")
}

func (v *dryRunValue) Type() string { return "none|server|client" }

// apply sets c up for a server dry run when asked, once the server is
// known to honour it; a dry run has nothing to --wait for. A client dry
// run is a server one too: the server's rules are the ones that count,
// and the CLI has no copy of them to check against.
func (d dryRunFlag) apply(ctx context.Context, c *Client, wait bool) error {
	if d.value == "none" || d.value == "" {
		return nil
	}
	if wait {
		return &ExitError{Code: ExitOther, Err: errors.New("--wait and --dry-run do not go together: a dry run changes nothing to wait for")}
	}
	c.DryRun = true
	return c.CheckDryRun(ctx)
}

// dryRunNote ends a verb's line in a dry run.
func dryRunNote(c *Client) string {
	if c.DryRun {
		return " (server dry run)"
	}
	return ""
}

// ---- output ----

// outputFlag is -o: "" (a table), wide, json, yaml, name; for get also
// jsonpath=TEMPLATE and custom-columns=SPEC (an allowed format written
// NAME=WHAT takes a value after NAME=).
type outputFlag struct {
	format  string
	allowed []string
}

func (o *outputFlag) flags(cmd *cobra.Command, allowed ...string) {
	o.allowed = allowed
	cmd.Flags().StringVarP(&o.format, "output", "o", "", "output format: "+strings.Join(allowed, "|")+" (default: a table)")
	cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		formats, directive := make([]string, len(allowed)), cobra.ShellCompDirectiveNoFileComp
		for i, a := range allowed {
			name, _, valued := strings.Cut(a, "=")
			formats[i] = name
			if valued {
				// The value follows without a space: jsonpath='{...}'.
				formats[i] += "="
				directive |= cobra.ShellCompDirectiveNoSpace
			}
		}
		return formats, directive
	})
}

func (o *outputFlag) check() error {
	if o.format == "" {
		return nil
	}
	for _, a := range o.allowed {
		name, _, valued := strings.Cut(a, "=")
		if a == o.format || valued && (o.format == name || strings.HasPrefix(o.format, name+"=")) {
			return nil
		}
	}
	return &ExitError{Code: ExitOther, Err: fmt.Errorf("invalid --output %q: want one of %s", o.format, strings.Join(o.allowed, ", "))}
}

// template is the parsed -o jsonpath=... or -o custom-columns=..., nil
// for another format.
func (o *outputFlag) template() (*templateOutput, error) {
	t, err := parseTemplateOutput(o.format)
	if err != nil {
		return nil, &ExitError{Code: ExitOther, Err: err}
	}
	return t, nil
}

// progressWriter is stderr when it is a terminal, else nil: progress lines
// are for people, never for pipes.
func progressWriter(cmd *cobra.Command) io.Writer {
	w := cmd.ErrOrStderr()
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// terminalWidth of w, or 0.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil {
			return width
		}
	}
	return 0
}
