// Command svcbridge publishes TCP services across an edge fleet through
// skupper routers. One binary, several roles: dev (everything in one
// process), api, worker and migrate.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

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
	config.Flags(root.PersistentFlags())
	root.AddCommand(
		roleCmd("dev", "Run everything in one process: API, worker, embedded Temporal server and Web UI, embedded store", runDev),
		roleCmd("api", "Run the REST API against PostgreSQL and a Temporal cluster", runAPIRole),
		roleCmd("worker", "Run the Temporal worker against PostgreSQL and a Temporal cluster", runWorkerRole),
		roleCmd("migrate", "Apply the database schema migrations and exit", runMigrate),
	)
	root.AddCommand(cliCommands()...)
	return root
}

func roleCmd(name, short string, run func(context.Context, config.Config) error) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			// Whatever an error quotes, a secret setting is not printed.
			return cfg.Redact(run(cmd.Context(), cfg))
		},
	}
}
