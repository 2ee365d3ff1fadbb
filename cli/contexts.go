package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"
)

// configCmd is kubectl's `config` verbs on the CLI's contexts.
func configCmd(o Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "List, switch and delete the contexts of the configuration file",
		Long: `List, switch and delete the contexts of the configuration file
($XDG_CONFIG_HOME/svcbridge/config, default ~/.config/svcbridge/config), as
'kubectl config' does. 'svcbridge login' and 'svcbridge dev' add contexts.`,
		Args: cobra.NoArgs,
	}
	var noHeaders bool
	getContexts := &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts; * marks the current one",
		Args:  cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			c, err := LoadConfig(ConfigPath())
			if err != nil {
				return err
			}
			return printContexts(cmd.OutOrStdout(), c, noHeaders)
		}),
	}
	noHeadersFlag(getContexts, &noHeaders)
	cmd.AddCommand(
		getContexts,
		&cobra.Command{
			Use:   "current-context",
			Short: "Print the current context",
			Args:  cobra.NoArgs,
			RunE: run(o, func(cmd *cobra.Command, _ []string) error {
				c, err := LoadConfig(ConfigPath())
				if err != nil {
					return err
				}
				if c.CurrentContext == "" {
					return errors.New("current-context is not set")
				}
				fmt.Fprintln(cmd.OutOrStdout(), c.CurrentContext)
				return nil
			}),
		},
		&cobra.Command{
			Use:   "use-context NAME",
			Short: "Make NAME the current context",
			Args:  cobra.ExactArgs(1),
			RunE: run(o, func(cmd *cobra.Command, args []string) error {
				path, name := ConfigPath(), args[0]
				if err := editContext(path, name, func(c *Config) { c.CurrentContext = name }); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Switched to context %q.\n", name)
				return nil
			}),
		},
		&cobra.Command{
			Use:   "delete-context NAME",
			Short: "Delete context NAME (and its token)",
			Args:  cobra.ExactArgs(1),
			RunE: run(o, func(cmd *cobra.Command, args []string) error {
				path, name := ConfigPath(), args[0]
				wasCurrent := false
				err := editContext(path, name, func(c *Config) {
					delete(c.Contexts, name)
					if wasCurrent = c.CurrentContext == name; wasCurrent {
						c.CurrentContext = ""
					}
				})
				if err != nil {
					return err
				}
				if wasCurrent {
					fmt.Fprintln(cmd.ErrOrStderr(), `warning: this removed your current context, use "svcbridge config use-context" to select another one`)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted context %s from %s\n", name, path)
				return nil
			}),
		},
	)
	return cmd
}

// editContext applies edit to the file at path when it has context name.
func editContext(path, name string, edit func(*Config)) error {
	return EditConfig(path, func(c *Config) error {
		if c.Contexts[name] == nil {
			return c.noContext(path, name)
		}
		edit(c)
		return nil
	})
}

// printContexts prints kubectl's table of contexts: never a token.
func printContexts(w io.Writer, c Config, noHeaders bool) error {
	t := newTable(w, tableHeader(noHeaders, "CURRENT", "NAME", "SERVER")...)
	for _, name := range slices.Sorted(maps.Keys(c.Contexts)) {
		mark := " "
		if name == c.CurrentContext {
			mark = "*"
		}
		server := ""
		if ctx := c.Contexts[name]; ctx != nil {
			server = ctx.Server
		}
		t.row(mark, name, server)
	}
	return t.flush()
}
