package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
)

// ExitDiffers is diff's exit code when apply would change something, as
// diff(1) and kubectl diff exit 1.
const ExitDiffers = 1

func diffCmd(o Options) *cobra.Command {
	var c conn
	var files []string
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Show what apply -f would change",
		Long: `Show, as a unified diff per object, what 'svcbridge apply -f' would change: the
live object (as 'get -o yaml' prints it, without status) against the object the
server would make of the document. diff runs apply's very steps with every write
sent as a server dry run (?dryRun=true), so it shows what the server's own rules
would make of each document, defaults and resolved names included, and stores
nothing. A document the server would refuse prints the error.

Exit codes, as diff(1) and 'kubectl diff': 0 no differences, 1 differences (or a
usage error), 2 and up as below.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge diff -f checkout.yaml
  svcbridge get services -o yaml | svcbridge diff -f -`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("diff needs -f FILE (a file, a directory, or - for stdin)")
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			docs, err := readDocuments(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if err := (dryRunFlag{"server"}).apply(cmd.Context(), client, false); err != nil {
				return err
			}
			return runDiff(cmd.Context(), client, cmd.OutOrStdout(), cmd.ErrOrStderr(), docs)
		}),
	}
	c.flags(cmd)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "YAML file, directory, or - for stdin (repeatable)")
	cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// runDiff prints each document's diff; c sends its writes as dry runs.
func runDiff(ctx context.Context, c *Client, out, errOut io.Writer, docs []document) error {
	var errs []error
	differs := false
	for _, d := range docs {
		text, err := diffOne(ctx, c, d)
		var ue *UnreachableError
		if errors.As(err, &ue) {
			return err
		}
		if err != nil {
			fmt.Fprintf(errOut, "error: %s (%s): %v\n", d.ref(), d.where(), err)
			errs = append(errs, err)
			continue
		}
		if text != "" {
			differs = true
			io.WriteString(out, text)
		}
	}
	if len(errs) > 0 {
		err := join(errs)
		return &reported{code: max(ExitCode(err), ExitDiffers), msg: err.Error()}
	}
	if differs {
		return &reported{code: ExitDiffers, msg: "differences found"}
	}
	return nil
}

// diffOne is the unified diff of d's live object against what apply's
// dry run answers; "" when they are the same.
func diffOne(ctx context.Context, c *Client, d document) (string, error) {
	live, toDoc, err := liveObject(ctx, c, d)
	if err != nil {
		return "", err
	}
	c.lastWrite = nil
	if _, err := applyOne(ctx, c, d); err != nil {
		return "", err
	}
	after := live
	if len(c.lastWrite) > 0 {
		after = c.lastWrite
	}
	a, err := specText(live, toDoc)
	if err != nil {
		return "", err
	}
	b, err := specText(after, toDoc)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "live/" + d.ref(), ToFile: "applied/" + d.ref(), Context: 3,
	})
}

// liveObject is the stored object d names (nil when there is none) and
// how to print it as a document.
func liveObject(ctx context.Context, c *Client, d document) ([]byte, func([]byte) ([]byte, error), error) {
	var raw []byte
	var err error
	var toDoc func([]byte) ([]byte, error)
	switch d.kind {
	case "Service":
		toDoc = serviceDocument
		if d.name != "" {
			var s Service
			s, err = c.GetService(ctx, d.name)
			raw = s.Raw
		}
	case "Agent", "AgentConfig":
		toDoc = agentDocument
		if d.name != "" {
			var a Agent
			a, err = c.GetAgent(ctx, d.name)
			raw = a.Raw
		}
	case "Microservice":
		toDoc = microserviceDocument
		app, name, _, _, ferr := microserviceFields(d)
		if ferr != nil {
			return nil, nil, ferr
		}
		var m Microservice
		m, _, err = c.MicroserviceNamed(ctx, app, name)
		raw = m.Raw
	default:
		_, err = applyOne(ctx, c, d) // says what is wrong with the kind
		return nil, nil, err
	}
	if NotFound(err) {
		return nil, toDoc, nil
	}
	return raw, toDoc, err
}

// specText is raw as a document without status, in YAML: what a diff
// compares. nil is "".
func specText(raw []byte, toDoc func([]byte) ([]byte, error)) (string, error) {
	if raw == nil {
		return "", nil
	}
	doc, err := toDoc(raw)
	if err != nil {
		return "", err
	}
	fields, err := objectFields(doc)
	if err != nil {
		return "", err
	}
	var kept object
	for _, f := range fields {
		if f.key != "status" {
			kept = append(kept, f)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return "", err
	}
	y, err := jsonToYAML(b)
	return string(y), err
}
