package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"svcbridge/cli"
	"svcbridge/config"
)

// cliCommands are the client commands (apply, get, describe, delete,
// reconcile, status, bench...); see package cli.
func cliCommands() []*cobra.Command {
	cmds := cli.Commands(cli.Options{Embedded: startEmbedded})
	for _, c := range cmds {
		c.GroupID = "client"
		if c.Name() == "bench" {
			// Without --server, bench starts what dev runs, with dev's settings.
			config.RoleFlags(c.Flags(), "dev")
			c.SetUsageFunc(groupedUsage)
		}
	}
	return cmds
}

// startEmbedded starts what `dev` runs, for `svcbridge bench` without
// --server: an embedded Temporal server (no Web UI), a SQLite store, a
// worker and the API, on free loopback ports, with its files in a
// temporary directory that stop removes. The settings come from the usual
// flags and environment (bridge ports, tag prefix, task queue...), except
// that the store is always the temporary SQLite file and logs default to
// warn.
func startEmbedded(ctx context.Context, cmd *cobra.Command) (cli.Embedded, error) {
	cfg, err := config.Load(cmd.Flags())
	if err != nil {
		return cli.Embedded{}, err
	}
	if !cmd.Flags().Changed("log-level") && os.Getenv("LOG_LEVEL") == "" {
		cfg.LogLevel = "warn"
	}
	dir, err := os.MkdirTemp("", "svcbridge-bench-")
	if err != nil {
		return cli.Embedded{}, err
	}
	cfg.DataDir, cfg.DatabaseURL, cfg.TemporalPort = dir, "", 0
	d, err := startDev(ctx, cfg, "127.0.0.1:0", -1)
	if err != nil {
		os.RemoveAll(dir)
		return cli.Embedded{}, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(runCtx); close(done) }()
	stop := func() {
		cancel()
		<-done
		d.close()
		os.RemoveAll(dir)
	}
	return cli.Embedded{Server: "http://" + d.ln.Addr().String(), Token: d.token, Stop: stop}, nil
}
