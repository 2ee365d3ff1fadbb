package config

import "github.com/spf13/pflag"

// A Group is a titled set of settings for --help. DevOnly groups are
// settings of `dev` alone (its embedded parts), which the other roles do
// not take.
type Group struct {
	Title   string
	DevOnly bool
	Flags   []string
}

// Groups sorts every setting into the group --help shows it under, in
// the order shown: dev's own ports and files first, as they are what a
// first run changes.
var Groups = []Group{
	{"Embedded (dev)", true, []string{"data-dir", "temporal-port", "ui-port"}},
	{"Listening", false, []string{"listen", "metrics-listen", "debug-listen", "http-read-header-timeout", "http-read-timeout",
		"http-write-timeout", "http-idle-timeout", "http-max-header-bytes"}},
	{"Request limits", false, []string{"watch-max", "watch-max-per-client", "watch-buffer",
		"auth-failures-per-minute", "auth-failure-burst", "trusted-proxies"}},
	{"Authentication", false, []string{"auth-tokens-file", "oidc-issuer", "oidc-audience", "oidc-role-claim",
		"oidc-client-id", "oidc-client-secret"}},
	{"Database", false, []string{"database-url", "db-max-open-conns", "db-max-idle-conns", "db-conn-max-lifetime"}},
	{"Temporal", false, []string{"temporal-address", "temporal-namespace", "temporal-ui-url", "task-queue",
		"workflow-id-prefix", "temporal-tls", "temporal-tls-cert", "temporal-tls-key", "temporal-tls-ca",
		"temporal-tls-server-name", "temporal-api-key"}},
	{"Services", false, []string{"bridge-ports-range", "service-annotation-tag", "resync-interval", "drift-interval"}},
	{"Kubernetes control plane", false, []string{"control-plane", "controller-namespace", "controller-name",
		"app-label", "distribution", "component-label-domain", "lb-poll-attempts", "lb-poll-interval"}},
	{"Logging", false, []string{"log-level", "log-format"}},
}

// RoleFlags adds to fs the settings role takes (see Flags): every one for
// dev, all but dev's own for the others. A setting fs already defines
// (a client flag of the same name) is left as it is.
func RoleFlags(fs *pflag.FlagSet, role string) {
	skip := map[string]bool{}
	for _, g := range Groups {
		for _, f := range g.Flags {
			skip[f] = g.DevOnly && role != "dev"
		}
	}
	for _, s := range Settings {
		if !skip[s.Flag] && fs.Lookup(s.Flag) == nil {
			fs.String(s.Flag, s.Default, s.Help+" (env "+s.Env+")")
		}
	}
}
