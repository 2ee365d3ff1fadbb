// Command svcbridge publishes TCP services across an edge fleet through
// skupper routers. One binary, several roles: dev (everything in one
// process), api, worker and migrate.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"svcbridge/cli"
	"svcbridge/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rootCmd().ExecuteContext(ctx); err != nil {
		cli.PrintErrors(os.Stderr, err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "svcbridge",
		Short:         "Publish TCP services across an edge fleet through skupper routers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddGroup(&cobra.Group{ID: "client", Title: "Client commands (--server, --token, --context; see each command's --help):"},
		&cobra.Group{ID: "server", Title: "Run svcbridge (server settings: see each command's --help):"})
	root.AddCommand(
		roleCmd("dev", "Run everything in one process: API, worker, embedded Temporal server and Web UI, embedded store", runDev),
		roleCmd("api", "Run the REST API against PostgreSQL and a Temporal cluster", runAPIRole),
		roleCmd("worker", "Run the Temporal worker against PostgreSQL and a Temporal cluster", runWorkerRole),
		roleCmd("migrate", "Apply the database schema migrations and exit", runMigrate),
		routerSyncCmd(),
	)
	root.AddCommand(cliCommands()...)
	return root
}

func roleCmd(name, short string, run func(context.Context, config.Config) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:     name,
		Short:   short,
		GroupID: "server",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			at, stop, err := serveDebug(cfg.DebugListen)
			if err != nil {
				return err
			}
			defer stop()
			if at != nil {
				newLogger(cfg).Info("Go's profiles served", "url", "http://"+at.String()+"/debug/pprof/")
			}
			// Whatever an error quotes, a secret setting is not printed.
			return cfg.Redact(run(cmd.Context(), cfg))
		},
	}
	config.RoleFlags(cmd.Flags(), name)
	cmd.SetUsageFunc(groupedUsage)
	return cmd
}

// groupedUsage prints a command's flags under the settings' groups
// (config.Groups), then its own flags: about fifty settings in one list
// hide the few a user looks for.
func groupedUsage(cmd *cobra.Command) error {
	out := cmd.OutOrStderr()
	fmt.Fprintf(out, "Usage:\n  %s\n", cmd.UseLine())
	grouped := map[string]bool{}
	for _, g := range config.Groups {
		fs := pflag.NewFlagSet(g.Title, pflag.ContinueOnError)
		fs.SortFlags = false // the group's own order: the common ones first
		for _, name := range g.Flags {
			if f := cmd.LocalFlags().Lookup(name); f != nil {
				fs.AddFlag(f)
				grouped[name] = true
			}
		}
		if fs.HasFlags() {
			fmt.Fprintf(out, "\n%s:\n%s", g.Title, fs.FlagUsages())
		}
	}
	own := pflag.NewFlagSet("own", pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !grouped[f.Name] {
			own.AddFlag(f)
		}
	})
	if own.HasFlags() {
		fmt.Fprintf(out, "\nFlags:\n%s", own.FlagUsages())
	}
	return nil
}
