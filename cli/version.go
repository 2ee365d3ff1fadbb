package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"svcbridge/buildinfo"
)

// versionView is `version -o json|yaml`.
type versionView struct {
	Client string `json:"client"`
	Server string `json:"server,omitempty"`
}

func versionCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client's and the server's versions",
		Long: `Print this CLI's version and the server's (GET /api/v3/status, which needs no
token), each a release tag or devel+<revision> from the binary's build info. Every
API answer also carries the server's version in the X-Svcbridge-Version header.
With --client, only the CLI's. When the server cannot be reached, the client's
version is printed and the exit code is 5.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge version
  svcbridge version -o json`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			v := versionView{Client: buildinfo.Version()}
			var serverErr error
			if !clientOnly {
				client, err := c.client(cmd)
				if err != nil {
					return err
				}
				v.Server, serverErr = client.ServerVersion(cmd.Context())
			}
			w := cmd.OutOrStdout()
			if out.format != "" {
				raw, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if err := printRaw(w, out.format, raw); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "Client: %s\n", v.Client)
				if v.Server != "" {
					fmt.Fprintf(w, "Server: %s\n", v.Server)
				}
			}
			return serverErr
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "json", "yaml")
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client's version only (no request)")
	return cmd
}
