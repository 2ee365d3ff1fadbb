package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"svcbridge/api"
	"svcbridge/config"
	"svcbridge/kube"
	"svcbridge/routermgmt"
	"svcbridge/routersync"
)

// routerSyncFlags are router-sync's settings: flag, environment variable,
// default, help.
var routerSyncFlags = []config.Setting{
	{Flag: "server", Env: "SVCBRIDGE_SERVER", Help: "svcbridge API the agent's router document comes from (http://host:port)"},
	{Flag: "token-file", Env: "SVCBRIDGE_AGENT_TOKEN_FILE", Help: "file holding the agent's token (or set SVCBRIDGE_AGENT_TOKEN)"},
	{Flag: "router", Env: "ROUTER_ADDRESS", Default: "127.0.0.1:5672", Help: "the router's management listener (host:port); with --server, the start-up file's management listener is put there"},
	{Flag: "config-file", Env: "ROUTER_CONFIG_FILE", Help: "the router's start-up file (skrouterd -c FILE), kept equal to what was applied; written before the router's first start"},
	{Flag: "configmap", Env: "ROUTER_CONFIGMAP", Help: "Kubernetes hub: NAMESPACE/NAME of the ConfigMap whose skrouterd.json the hub router applies (instead of --server)"},
	{Flag: "long-poll", Env: "ROUTER_LONG_POLL", Default: "30s", Help: "how long one request waits on the server for a change (1s to 5m)"},
	{Flag: "resync", Env: "ROUTER_RESYNC", Default: "1m", Help: "how often the router is read again when nothing changed"},
	{Flag: "log-level", Env: "LOG_LEVEL", Default: "info", Help: "debug, info, warn or error"},
	{Flag: "log-format", Env: "LOG_FORMAT", Default: "text", Help: "text or json"},
}

func routerSyncCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "router-sync",
		Short: "Run beside one skupper router: apply the agent's router document (or the hub ConfigMap) to it",
		Long: `router-sync runs beside one skupper router (skrouterd). It pulls the agent's router document
from svcbridge with the agent's token (learning of changes by a long poll), reads what the router
holds over AMQP management, creates and deletes only what differs, keeps the router's start-up
file equal to what was applied, and reports what the router confirmed. It never removes anything
because svcbridge cannot be reached. With --configmap it applies the Kubernetes hub's ConfigMap
instead.`,
		GroupID: "server",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			get := func(name string) string { return settingValue(cmd, name) }
			return runRouterSync(cmd.Context(), get)
		},
	}
	for _, s := range routerSyncFlags {
		cmd.Flags().String(s.Flag, s.Default, s.Help+envHelp(s.Env))
	}
	return cmd
}

// settingValue is a router-sync setting: the flag when set, else its
// environment variable, else the default.
func settingValue(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f.Changed {
		return f.Value.String()
	}
	for _, s := range routerSyncFlags {
		if s.Flag == name {
			if v, ok := os.LookupEnv(s.Env); ok {
				return v
			}
		}
	}
	return f.DefValue
}

func envHelp(env string) string { return " [$" + env + "]" }

func runRouterSync(ctx context.Context, get func(string) string) error {
	log := newLogger(config.Config{LogLevel: get("log-level"), LogFormat: get("log-format")})
	durations := map[string]time.Duration{}
	for _, name := range []string{"long-poll", "resync"} {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			return fmt.Errorf("invalid setting --%s: %q is not a positive duration", name, get(name))
		}
		durations[name] = d
	}
	// The server holds a long poll for whole seconds, at most 5 minutes:
	// a shorter one would ask again at once, without end; a longer one
	// would be refused each time.
	if d := durations["long-poll"]; d < time.Second || d > api.MaxLongPoll {
		return fmt.Errorf("invalid setting --long-poll: %s is not from 1s to %s", d, api.MaxLongPoll)
	}
	addr := get("router")
	opts := routersync.Options{
		ConfigFile: get("config-file"),
		Resync:     durations["resync"],
		Log:        log.With("router", addr),
		Dial: func(ctx context.Context) (routersync.Router, error) {
			return routermgmt.Dial(ctx, addr)
		},
	}
	switch {
	case get("configmap") != "" && get("server") != "":
		return errors.New("invalid settings: give --server (an agent's router) or --configmap (the Kubernetes hub), not both")
	case get("configmap") != "":
		ns, name, ok := strings.Cut(get("configmap"), "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("invalid setting --configmap: %q is not NAMESPACE/NAME", get("configmap"))
		}
		rc, err := kube.RESTConfig("")
		if err != nil {
			return err
		}
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		opts.Source = &routersync.ConfigMap{Client: kc, Namespace: ns, Name: name}
	case get("server") != "":
		token, err := agentToken(get("token-file"))
		if err != nil {
			return err
		}
		long := durations["long-poll"]
		opts.Source = &routersync.Pull{Server: get("server"), Token: token, LongPoll: long, Management: addr,
			Client: &http.Client{Timeout: long + 30*time.Second}}
	default:
		return errors.New("invalid settings: --server (with the agent's token) or --configmap is required")
	}
	log.Info("router-sync started", "router", addr, "configFile", opts.ConfigFile)
	return routersync.New(opts).Run(ctx)
}

// agentToken reads the agent's token from its file, else from
// SVCBRIDGE_AGENT_TOKEN.
func agentToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("invalid setting --token-file: %w", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("invalid setting --token-file: %s is empty", file)
	}
	if t := strings.TrimSpace(os.Getenv("SVCBRIDGE_AGENT_TOKEN")); t != "" {
		return t, nil
	}
	return "", errors.New("invalid settings: the agent's token is required: --token-file FILE or SVCBRIDGE_AGENT_TOKEN")
}
