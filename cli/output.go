package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"svcbridge/wire"
)

// printJSON prints a raw API answer indented, as it is.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("print JSON: %v", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printYAML prints a raw API answer as block YAML, keeping the API's key
// order.
func printYAML(w io.Writer, raw []byte) error {
	out, err := jsonToYAML(raw)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// jsonToYAML converts JSON to block YAML. JSON is YAML, so the node tree
// keeps the key order; only the flow styles are dropped. Strings stay
// strings: the encoder quotes "10024" or "true".
func jsonToYAML(raw []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		// Not expected of the API's JSON; fall back to sorted keys.
		var v any
		if jerr := json.Unmarshal(raw, &v); jerr != nil {
			return nil, fmt.Errorf("print YAML: %v", jerr)
		}
		return yaml.Marshal(v)
	}
	blockStyle(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("print YAML: %v", err)
	}
	enc.Close()
	return buf.Bytes(), nil
}

func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "" {
		n.Tag = n.ShortTag()
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// jsonArray joins raw JSON values into one array.
func jsonArray[T any](items []T, raw func(T) json.RawMessage) []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw(it))
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// printRaw prints raw in format json or yaml.
func printRaw(w io.Writer, format string, raw []byte) error {
	if format == "yaml" {
		return printYAML(w, raw)
	}
	return printJSON(w, raw)
}

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

// noHeadersFlag adds --no-headers, as kubectl's, to a command printing a
// table.
func noHeadersFlag(cmd *cobra.Command, noHeaders *bool) {
	cmd.Flags().BoolVar(noHeaders, "no-headers", false, "tables: print no header line")
}

// tableHeader is header, or none with --no-headers.
func tableHeader(noHeaders bool, header ...string) []string {
	if noHeaders {
		return nil
	}
	return header
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = tableCell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// tableCell is a cell as a table prints it: "-" when empty, and without
// the tabs and newlines that would break the columns.
func tableCell(c string) string {
	if c == "" {
		return "-"
	}
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
}

func (t *table) flush() error { return t.tw.Flush() }

// age is a short human duration since t: 42s, 5m, 3h, 2d.
func age(t wire.Time, now time.Time) string {
	if time.Time(t).IsZero() {
		return "-"
	}
	d := now.Sub(time.Time(t))
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// moment is t in the local zone, and how long ago it was.
func moment(t wire.Time, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", time.Time(t).Local().Format(time.RFC3339), age(t, now))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// plural is "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
