package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func rotateTokenCmd(o Options) *cobra.Command {
	var c conn
	var file string
	cmd := &cobra.Command{
		Use:   "rotate-token AGENT [--file FILE]",
		Short: "Give an agent a new credential, for its router side (the old one stops working)",
		Long: `Give an agent a new credential (POST /api/v3/agents/{agent}/token): the credential its
router side (svcbridge router-sync --token-file) or agent presents to the pull API. The old one
stops working at once. With --file the credential is written to FILE, readable by its owner
only (mode 0600), and not printed; else it is printed.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge rotate-token hub --file hub.token
  svcbridge router-sync --server http://127.0.0.1:8080 --token-file hub.token --config-file hub-router.json`,
		Args: cobra.ExactArgs(1),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			tok, err := client.RotateAgentToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if file == "" {
				fmt.Fprintf(w, "agent/%s token rotated: %s (the old one no longer works)\n", tok.Name, tok.Token)
				return nil
			}
			if err := os.WriteFile(file, []byte(tok.Token+"\n"), 0o600); err != nil {
				return fmt.Errorf("the new token of agent %s could not be written (the old one no longer works; rotate again): %w", tok.Name, err)
			}
			// WriteFile keeps an existing file's mode.
			if err := os.Chmod(file, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(w, "agent/%s token rotated (written to %s; the old one no longer works)\n", tok.Name, file)
			return nil
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "write the new credential to this file (mode 0600) instead of printing it")
	c.flags(cmd)
	return cmd
}
