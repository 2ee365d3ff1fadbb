package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"svcbridge/wire"
)

// PreviewDistribution asks who would listen for service name with tags
// (nil tags: its own), and why the other agents would not.
func (c *Client) PreviewDistribution(ctx context.Context, name string, tags []string) (wire.DistributionPreview, []byte, error) {
	path := "/api/v3/services/" + esc(name) + "/distribution"
	if tags != nil {
		path += "?" + url.Values{"tags": {strings.Join(tags, ",")}}.Encode()
	}
	var p wire.DistributionPreview
	raw, err := c.getJSON(ctx, path, &p)
	return p, raw, err
}

func previewCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	var tags []string
	cmd := &cobra.Command{
		Use:   "preview service NAME [--tags a,b]",
		Short: "Show which agents would listen for a service with some tags",
		Long: `Show, before changing a service's tags, which agents would listen for it with
--tags (default: its own tags; --tags "" for none) and why each other agent would
not: the answer of GET /api/v3/services/{name}/distribution?tags=. Nothing is
changed. CHANGE says what the tags would change: + starts listening, - stops.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge preview service checkout --tags checkout,payments
  svcbridge preview service/checkout --tags "" -o yaml`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeResources(&c),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			_, refs, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(refs) != 1 || refs[0].kind != "services" {
				return &ExitError{Code: ExitOther, Err: errors.New("preview takes one service: preview service NAME")}
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			var want []string
			if cmd.Flags().Changed("tags") {
				want = nonNil(tags)
			}
			p, raw, err := client.PreviewDistribution(cmd.Context(), refs[0].name, want)
			if err != nil {
				return err
			}
			if out.format != "" {
				return printRaw(cmd.OutOrStdout(), out.format, raw)
			}
			return printPreview(cmd.OutOrStdout(), p)
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "json", "yaml")
	cmd.Flags().StringSliceVar(&tags, "tags", nil, "the service's tags to preview, comma-separated (default: its own)")
	return cmd
}

func printPreview(w io.Writer, p wire.DistributionPreview) error {
	n := 0
	for _, a := range p.Agents {
		if a.WouldListen {
			n++
		}
	}
	fmt.Fprintf(w, "Service %s with tags [%s]: %s would listen.\n", p.Service, strings.Join(p.Tags, ", "), plural(n, "agent", "agents"))
	if len(p.IgnoredTags) > 0 {
		fmt.Fprintf(w, "Ignored (not distribution tags): %s\n", strings.Join(p.IgnoredTags, ", "))
	}
	if len(p.Agents) == 0 {
		return nil
	}
	t := newTable(w, "AGENT", "ROUTER-MODE", "WOULD-LISTEN", "LISTENING", "CHANGE", "WHY")
	for _, a := range p.Agents {
		change := ""
		switch {
		case a.WouldListen && !a.Listening:
			change = "+"
		case !a.WouldListen && a.Listening:
			change = "-"
		}
		var why []string
		for _, r := range a.Reasons {
			why = append(why, r.Message)
		}
		t.row(a.AgentName, a.RouterMode, yesNo(a.WouldListen), yesNo(a.Listening), change, strings.Join(why, "; "))
	}
	return t.flush()
}
