package cli

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func loginCmd(o Options) *cobra.Command {
	var server, token, name string
	cmd := &cobra.Command{
		Use:   "login --server URL [--token TOKEN] [--context NAME]",
		Short: "Save a server and its token as a context of the configuration file",
		Long: `Check that the server accepts the token, then save both as a context of the
configuration file ($XDG_CONFIG_HOME/svcbridge/config, default
~/.config/svcbridge/config, mode 0600) and make it the current context, as
'kubectl config set-context' does. Every client command then uses it from any
directory; --context NAME picks another, SVCBRIDGE_SERVER and SVCBRIDGE_TOKEN
still win.

The token is --token, else $SVCBRIDGE_TOKEN, else read from stdin (without echo
on a terminal), so that it need not appear in the shell's history. The context is
named --context, default the server's host:port. 'svcbridge dev' saves its own
server as the context dev.
` + exitCodesHelp,
		Example: `  svcbridge login --server https://svcbridge.example.com --token "$TOKEN"
  pass svcbridge/prod | svcbridge login --server https://svcbridge.example.com --context prod`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				return errors.New("login needs --server URL")
			}
			srv, err := normalizeServer(server)
			if err != nil {
				return err
			}
			if token == "" {
				token = strings.TrimSpace(os.Getenv("SVCBRIDGE_TOKEN"))
			}
			if token == "" {
				if token, err = readToken(cmd); err != nil {
					return err
				}
			}
			if name == "" {
				u, _ := url.Parse(srv)
				name = u.Host
			}
			c := &Client{Server: srv, Token: token, unauthorized: "the server refused this token; nothing was saved"}
			if err := c.CheckToken(cmd.Context()); err != nil {
				return err
			}
			path := ConfigPath()
			if err := SaveContext(path, name, Context{Server: srv, Token: token}); err != nil {
				return fmt.Errorf("save the context: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "context %s saved in %s and made current (server %s)\n", name, path, srv)
			return nil
		}),
	}
	cmd.Flags().StringVar(&server, "server", "", "svcbridge API URL")
	cmd.Flags().StringVar(&token, "token", "", "bearer token (env SVCBRIDGE_TOKEN; default: read from stdin)")
	cmd.Flags().StringVar(&name, "context", "", "name of the context (default: the server's host:port)")
	return cmd
}

// readToken reads the token from stdin: without echo on a terminal, else
// its first line.
func readToken(cmd *cobra.Command) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(cmd.ErrOrStderr(), "Token: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if strings.TrimSpace(line) == "" {
		return "", fmt.Errorf("no token: give --token, set SVCBRIDGE_TOKEN, or pipe it to stdin (%v)", err)
	}
	return strings.TrimSpace(line), nil
}
