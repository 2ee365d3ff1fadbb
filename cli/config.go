package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the CLI's configuration file, as kubectl's kubeconfig: named
// contexts (a server and its token) and the current one. `svcbridge
// login` and `svcbridge dev` write it.
type Config struct {
	CurrentContext string              `yaml:"current-context,omitempty"`
	Contexts       map[string]*Context `yaml:"contexts,omitempty"`
}

// Context is one server and the token to send it.
type Context struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token,omitempty"`
}

// ConfigPath is the configuration file: $XDG_CONFIG_HOME/svcbridge/config,
// else ~/.config/svcbridge/config; "" when neither can be told.
func ConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "svcbridge", "config")
}

// LoadConfig reads the configuration file at path; a file that does not
// exist is an empty configuration.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	return c, nil
}

// SaveContext stores ctx as context name in the file at path and makes it
// the current context, as login does.
func SaveContext(path, name string, ctx Context) error {
	return EditConfig(path, func(c *Config) error {
		c.put(name, ctx)
		c.CurrentContext = name
		return nil
	})
}

// AddContext stores ctx as context name in the file at path; it becomes
// the current context only when there is none, so that `dev` never takes
// over the user's choice. current says whether name is the current
// context afterwards.
func AddContext(path, name string, ctx Context) (current bool, err error) {
	err = EditConfig(path, func(c *Config) error {
		c.put(name, ctx)
		if c.Contexts[c.CurrentContext] == nil {
			c.CurrentContext = name
		}
		current = c.CurrentContext == name
		return nil
	})
	return current, err
}

// DevContext is the context `svcbridge dev` saves its server as.
const DevContext = "dev"

// AddDevContext saves a `svcbridge dev` server as a context of the file
// at path, as AddContext does: as context dev, unless dev is another
// svcbridge server that answers (another dev, on another data dir or
// port, still running). That one is kept, and this one is saved as
// dev-<port> (dev-<port>-2, ... when that is another running server's
// too), which a line on warn says. name is the context saved; current
// whether it is the current context.
func AddDevContext(path string, ctx Context, warn io.Writer) (name string, current bool, err error) {
	c, err := LoadConfig(path)
	if err != nil {
		return "", false, err
	}
	name = DevContext
	for n := 1; c.heldByAnother(name, ctx.Server); n++ {
		name = devContextName(ctx.Server, n)
	}
	if current, err = AddContext(path, name, ctx); err != nil || name == DevContext {
		return name, current, err
	}
	fmt.Fprintf(warn, "The CLI context %s is %s, another svcbridge server, which is running: it is kept, and this server is saved as context %s "+
		"(svcbridge --context %s ..., or svcbridge config use-context %s).\n", DevContext, c.Contexts[DevContext].Server, name, name, name)
	return name, current, nil
}

// devContextName is the nth name AddDevContext tries after dev, after
// the server's port: dev-8081, dev-8081-2, ...
func devContextName(server string, n int) string {
	name := "dev"
	if u, err := url.Parse(server); err == nil && u.Port() != "" {
		name += "-" + u.Port()
	}
	if n > 1 || name == "dev" {
		name += "-" + strconv.Itoa(n)
	}
	return name
}

// heldByAnother reports whether context name holds a server other than
// server that answers as svcbridge: one not running any more may be
// replaced, as its token is of no use.
func (c *Config) heldByAnother(name, server string) bool {
	held := c.Contexts[name]
	if held == nil {
		return false
	}
	heldURL, err := normalizeServer(held.Server)
	if err != nil {
		return false
	}
	if ours, err := normalizeServer(server); err == nil && ours == heldURL {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ok, _ := (&Client{Server: heldURL}).isSvcbridge(ctx)
	return ok
}

func (c *Config) put(name string, ctx Context) {
	if c.Contexts == nil {
		c.Contexts = map[string]*Context{}
	}
	c.Contexts[name] = &ctx
}

// noContext is the error for a context name that is not in c.
func (c *Config) noContext(path, name string) error {
	return &ExitError{Code: ExitOther, Err: fmt.Errorf("no context %q in %s (contexts: %s)",
		name, path, strings.Join(slices.Sorted(maps.Keys(c.Contexts)), ", "))}
}

// EditConfig loads the file at path, applies edit and writes the result
// (mode 0600: it holds tokens); nothing is written when edit fails.
func EditConfig(path string, edit func(*Config) error) error {
	if path == "" {
		return errors.New("no configuration directory: set XDG_CONFIG_HOME or HOME")
	}
	c, err := LoadConfig(path)
	if err != nil {
		return err
	}
	if err := edit(&c); err != nil {
		return err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Written aside and renamed: a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append([]byte("# svcbridge CLI contexts, written by 'svcbridge login', 'svcbridge dev' and 'svcbridge config'.\n"), b...), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// settings are where the connection settings may come from, in order.
type settings struct {
	flagServer, flagToken string
	envServer, envToken   string
	contextName           string // --context, else the current context
	contextExplicit       bool   // --context was given
	config                Config
	configPath            string
	dataDirToken          string // dev's <data-dir>/admin.token, when readable
	dataDirPath           string
}

// connection is what resolve decides: the server, the token, and where
// each came from (for a 401's hint).
type connection struct {
	server, token string
	context       string   // the context server came from; "" when none did
	tokenFrom     string   // where the token came from; "" without one
	looked        []string // every place a token was looked for
}

// resolve picks the server and the token. Flags win over the environment,
// which wins over the context, as in kubectl. A context's token goes only
// to that context's server: with --server or SVCBRIDGE_SERVER naming
// another, it is not sent. dev's admin.token in the data directory comes
// last.
func (s settings) resolve() (connection, error) {
	var ctx *Context
	if s.contextName != "" {
		ctx = s.config.Contexts[s.contextName]
		if ctx == nil && s.contextExplicit {
			return connection{}, s.config.noContext(s.configPath, s.contextName)
		}
	}
	var c connection
	switch {
	case s.flagServer != "":
		c.server = s.flagServer
	case s.envServer != "":
		c.server = s.envServer
	case ctx != nil && ctx.Server != "":
		c.server, c.context = ctx.Server, s.contextName
	default:
		c.server = DefaultServer
	}
	server, err := normalizeServer(c.server)
	if err != nil {
		return c, err
	}
	c.server = server
	ctxServer := ""
	if ctx != nil && ctx.Server != "" {
		ctxServer, _ = normalizeServer(ctx.Server)
	}
	type source struct{ token, from string }
	sources := []source{{s.flagToken, "--token"}, {s.envToken, "SVCBRIDGE_TOKEN"}}
	if ctx != nil {
		from := fmt.Sprintf("context %s in %s", s.contextName, s.configPath)
		if ctxServer == c.server {
			sources = append(sources, source{ctx.Token, from})
		} else {
			c.looked = append(c.looked, from+" (not used: it is for "+ctxServer+")")
		}
	} else if s.configPath != "" {
		c.looked = append(c.looked, s.configPath+" (no context)")
	}
	sources = append(sources, source{s.dataDirToken, s.dataDirPath})
	for _, src := range sources {
		if src.token != "" {
			c.token, c.tokenFrom = src.token, src.from
			return c, nil
		}
	}
	c.looked = append([]string{"--token", "SVCBRIDGE_TOKEN"}, append(c.looked, s.dataDirPath)...)
	return c, nil
}

// unauthorizedHint says, on a 401, where the token came from or where the
// CLI looked, and what to do.
func (c connection) unauthorizedHint() string {
	login := fmt.Sprintf("run 'svcbridge login --server %s --token TOKEN', set SVCBRIDGE_TOKEN, or use --token", c.server)
	if c.tokenFrom == "" {
		return "no token was found (looked at " + strings.Join(c.looked, ", ") + "); " + login
	}
	return "the server refused the token from " + c.tokenFrom + "; " + login
}
