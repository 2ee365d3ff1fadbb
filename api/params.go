package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// queryParam is a query parameter a route accepts, as the OpenAPI document
// declares it.
type queryParam struct {
	Name string `json:"name"`
	In   string `json:"in"`
	// Style deepObject takes the names name[...] (/iofog-list's
	// filters[N][key]); the handler reads their shape.
	Style string `json:"style"`
	Ref   string `json:"$ref"`
	// Schema.Type array: the parameter may be given more than once.
	Schema struct {
		Type string `json:"type"`
	} `json:"schema"`
}

// routeParams are the query parameters of every route, by gin's method
// and path ("GET /api/v3/agents/:agent"), read from the served OpenAPI
// document: it is the one declaration of what a route accepts, so what is
// refused and what is documented cannot drift apart.
var routeParams = mustRouteParams(openAPIDocument)

// mustRouteParams reads the query parameters of each operation of doc
// (the path item's and the operation's, $refs resolved). The document is
// embedded: a malformed one fails every test at start.
func mustRouteParams(doc []byte) map[string][]queryParam {
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]queryParam `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		panic(fmt.Sprintf("openapi.json: %v", err))
	}
	// query keeps the query parameters of params (the JSON of a
	// parameter list), resolved.
	query := func(params json.RawMessage) []queryParam {
		var ps []queryParam
		if params != nil {
			if err := json.Unmarshal(params, &ps); err != nil {
				panic(fmt.Sprintf("openapi.json: %v", err))
			}
		}
		var out []queryParam
		for _, p := range ps {
			if p.Ref != "" {
				resolved, ok := d.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				if !ok {
					panic("openapi.json: unresolved " + p.Ref)
				}
				p = resolved
			}
			if p.In == "query" {
				out = append(out, p)
			}
		}
		return out
	}
	out := map[string][]queryParam{}
	for path, item := range d.Paths {
		common := query(item["parameters"])
		ginPath := strings.NewReplacer("{", ":", "}", "").Replace(path)
		for method, op := range item {
			if !slices.Contains(httpMethods, method) {
				continue // parameters, summary, description, servers
			}
			var o struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(op, &o); err != nil {
				panic(fmt.Sprintf("openapi.json: %v", err))
			}
			out[strings.ToUpper(method)+" "+ginPath] = append(slices.Clip(common), query(o.Parameters)...)
		}
	}
	return out
}

// httpMethods are the operations a path item can hold.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// unknownParams are the names in query that no parameter of accepted
// takes, sorted.
func unknownParams(accepted []queryParam, query url.Values) []string {
	var unknown []string
	for name := range query {
		if !slices.ContainsFunc(accepted, func(p queryParam) bool {
			return name == p.Name || p.Style == "deepObject" && strings.HasPrefix(name, p.Name+"[")
		}) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// repeatedParam is the first parameter (in name order) given more than
// once that accepted does not take as a list, or "": a second value would
// otherwise be ignored without a word.
func repeatedParam(accepted []queryParam, query url.Values) string {
	for _, name := range slices.Sorted(maps.Keys(query)) {
		if len(query[name]) > 1 && !slices.ContainsFunc(accepted, func(p queryParam) bool {
			return p.Name == name && p.Schema.Type == "array"
		}) {
			return name
		}
	}
	return ""
}

// unknownParamsError is the 400 of a request with unknown parameters,
// naming them and what the route accepts, as an unknown body field is
// named.
func unknownParamsError(accepted []queryParam, unknown []string) error {
	takes := "none"
	if len(accepted) > 0 {
		names := make([]string, len(accepted))
		for i, p := range accepted {
			names[i] = p.Name
		}
		takes = strings.Join(names, ", ")
	}
	what := "parameter"
	if len(unknown) > 1 {
		what = "parameters"
	}
	return badRequest("Unknown query %s %s (this route takes %s)", what, strings.Join(unknown, ", "), takes)
}
