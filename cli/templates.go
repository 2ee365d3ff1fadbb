package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// get's -o jsonpath=TEMPLATE and -o custom-columns=SPEC, with kubectl's
// semantics (its JSONPath printer and custom-columns printer), on the
// objects as the API answers them: .name, .bridgePort,
// .provisioningStatus, .distribution[*].agentName... (the fields of -o
// json's documents, without their metadata/spec/status levels). A list
// is a kind: List whose items are those objects, as kubectl's is:
// -o jsonpath='{.items[*].name}'.

// templateOutput is a parsed -o jsonpath=... or -o custom-columns=...
type templateOutput struct {
	jsonpath *jsonpath.JSONPath // -o jsonpath
	columns  []column           // -o custom-columns
}

// column is one column of -o custom-columns.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// Output formats that carry a template after "=".
const (
	formatJSONPath      = "jsonpath"
	formatCustomColumns = "custom-columns"
)

// parseTemplateOutput parses -o jsonpath=TEMPLATE or -o
// custom-columns=SPEC; nil for any other format.
func parseTemplateOutput(format string) (*templateOutput, error) {
	name, text, _ := strings.Cut(format, "=")
	switch name {
	case formatJSONPath:
		if text == "" {
			return nil, errors.New("-o jsonpath needs a template: -o jsonpath='{.items[*].name}'")
		}
		p, err := parseJSONPath(text)
		if err != nil {
			return nil, fmt.Errorf("-o jsonpath: %v", err)
		}
		return &templateOutput{jsonpath: p}, nil
	case formatCustomColumns:
		if text == "" {
			return nil, errors.New("-o custom-columns needs columns: -o custom-columns=NAME:.name,PORT:.bridgePort")
		}
		var cols []column
		for _, spec := range strings.Split(text, ",") {
			header, path, ok := strings.Cut(spec, ":")
			if !ok {
				return nil, fmt.Errorf("-o custom-columns: unexpected column %q, want HEADER:PATH (NAME:.name)", spec)
			}
			expr, err := relaxedJSONPath(path)
			if err != nil {
				return nil, fmt.Errorf("-o custom-columns: column %s: %v", header, err)
			}
			p, err := parseJSONPath(expr)
			if err != nil {
				return nil, fmt.Errorf("-o custom-columns: column %s: %v", header, err)
			}
			cols = append(cols, column{header: header, path: p})
		}
		return &templateOutput{columns: cols}, nil
	}
	return nil, nil
}

// parseJSONPath parses a template as kubectl's printers do: a missing
// key prints nothing (custom-columns: <none>), not an error.
func parseJSONPath(text string) (*jsonpath.JSONPath, error) {
	p := jsonpath.New("out").AllowMissingKeys(true)
	return p, p.Parse(text)
}

// relaxedPath is what a custom column's path may be, as kubectl takes it:
// .a.b, a.b, {.a.b} or {a.b}.
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedJSONPath is a custom column's path as a template, {.a.b}
// (kubectl's RelaxedJSONPathExpression).
func relaxedJSONPath(path string) (string, error) {
	m := relaxedPath.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("unexpected path %q, want .name1.name2 (or name1.name2, {.name1.name2})", path)
	}
	return "{." + m[1] + m[2] + "}", nil
}

// jsonValue decodes an API object for a template: numbers that are
// integers as int64 and others as float64, as kubectl's unstructured
// objects hold them, so that 10024 prints as 10024.
func jsonValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// print prints raws, the objects of the API's answers: with jsonpath, the
// template over the one object when one was asked for by name (single),
// else over a kind: List of them; with custom-columns, a row each.
func (t *templateOutput) print(w io.Writer, raws []json.RawMessage, single, noHeaders bool) error {
	if t.jsonpath != nil {
		data := jsonArray(raws, func(r json.RawMessage) json.RawMessage { return r })
		if single && len(raws) == 1 {
			data = raws[0]
		} else {
			list, err := object{{"apiVersion", rawString(apiVersion)}, {"kind", rawString("List")}, {"items", data}}.MarshalJSON()
			if err != nil {
				return err
			}
			data = list
		}
		return t.execute(w, data)
	}
	tab := newTable(w, tableHeader(noHeaders, t.headers()...)...)
	for _, raw := range raws {
		row, err := t.row(raw)
		if err != nil {
			return err
		}
		tab.row(row...)
	}
	return tab.flush()
}

// execute prints the jsonpath template over one JSON value.
func (t *templateOutput) execute(w io.Writer, raw []byte) error {
	v, err := jsonValue(raw)
	if err != nil {
		return fmt.Errorf("-o jsonpath: %v", err)
	}
	if err := t.jsonpath.Execute(w, v); err != nil {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("-o jsonpath: %v", err)}
	}
	return nil
}

func (t *templateOutput) headers() []string {
	h := make([]string, len(t.columns))
	for i, c := range t.columns {
		h[i] = c.header
	}
	return h
}

// row is the custom columns of one object: each path's values joined by
// commas, <none> where it has none (or null), as kubectl prints them.
func (t *templateOutput) row(raw []byte) ([]string, error) {
	v, err := jsonValue(raw)
	if err != nil {
		return nil, fmt.Errorf("-o custom-columns: %v", err)
	}
	row := make([]string, len(t.columns))
	for i, c := range t.columns {
		results, err := c.path.FindResults(v)
		if err != nil {
			return nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("-o custom-columns: column %s: %v", c.header, err)}
		}
		var values []string
		for _, r := range results {
			for _, value := range r {
				// null is none, as an unset field is in Kubernetes'
				// objects, which leave it out.
				if value.IsValid() && value.Interface() != nil {
					values = append(values, fmt.Sprint(value.Interface()))
				}
			}
		}
		row[i] = strings.Join(values, ",")
		if len(values) == 0 {
			row[i] = "<none>"
		}
	}
	return row, nil
}
