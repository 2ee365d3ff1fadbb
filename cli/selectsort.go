package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// parseSelector reads get's -l/--selector: tags, comma-separated, each
// bare or as tag=NAME (kubectl's label syntax, with tags for labels).
// A service is selected when it has every one, as kubectl's comma is an
// AND.
func parseSelector(sel string) ([]string, error) {
	var tags []string
	for _, term := range strings.Split(sel, ",") {
		term = strings.TrimSpace(term)
		if key, value, ok := strings.Cut(term, "="); ok {
			if strings.TrimSpace(key) != "tag" {
				return nil, fmt.Errorf("selector %q: services are selected by tag only (tag=NAME or NAME), not by %q", sel, key)
			}
			term = strings.TrimSpace(value)
		}
		if term == "" {
			return nil, fmt.Errorf("selector %q: an empty tag", sel)
		}
		tags = append(tags, term)
	}
	return tags, nil
}

// selectServices keeps the services that have every tag of tags.
func selectServices(svcs []Service, tags []string) []Service {
	var out []Service
	for _, s := range svcs {
		if !slices.ContainsFunc(tags, func(t string) bool { return !slices.Contains(s.Tags, t) }) {
			out = append(out, s)
		}
	}
	return out
}

// parseSortBy reads get's --sort-by: a field path as kubectl takes it
// (.bridgePort, {.metadata.name}), of the object as the API answers it.
// The documents' metadata, spec and status levels are accepted and
// skipped: the API's objects are flat.
func parseSortBy(field string) ([]string, error) {
	f := strings.TrimSuffix(strings.TrimPrefix(field, "{"), "}")
	rest, ok := strings.CutPrefix(f, ".")
	if !ok || rest == "" {
		return nil, fmt.Errorf("--sort-by %q: want a field path such as .name or .bridgePort", field)
	}
	path := strings.Split(rest, ".")
	if slices.Contains(path, "") {
		return nil, fmt.Errorf("--sort-by %q: want a field path such as .name or .bridgePort", field)
	}
	if len(path) > 1 && (path[0] == "metadata" || path[0] == "spec" || path[0] == "status") {
		path = path[1:]
	}
	return path, nil
}

// sortByField returns items sorted stably by the value at path in each
// one's raw JSON (items as they are when path is nil): numbers by value,
// times (RFC 3339 strings) by instant, other strings and booleans as
// text; an item without the field comes first. A path no item has is an
// error: a misspelt field, not an order.
func sortByField[T any](items []T, raw func(T) json.RawMessage, path []string) ([]T, error) {
	if path == nil || len(items) == 0 {
		return items, nil
	}
	values := make([]any, len(items))
	found := false
	for i, it := range items {
		if v, ok := fieldValue(raw(it), path); ok {
			values[i], found = v, true
		}
	}
	if !found {
		return nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("--sort-by .%s: no object has that field", strings.Join(path, "."))}
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareValues(values[a], values[b]) })
	sorted := make([]T, len(items))
	for i, k := range order {
		sorted[i] = items[k]
	}
	return sorted, nil
}

// fieldValue is the value at path in raw, and whether it is there (and
// not null).
func fieldValue(raw json.RawMessage, path []string) (any, bool) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, false
	}
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// compareValues orders two field values; nil (absent) first.
func compareValues(a, b any) int {
	switch {
	case a == nil || b == nil:
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	}
	if x, ok := a.(json.Number); ok {
		if y, ok := b.(json.Number); ok {
			fx, _ := x.Float64()
			fy, _ := y.Float64()
			return cmp.Compare(fx, fy)
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			tx, errX := time.Parse(time.RFC3339Nano, x)
			ty, errY := time.Parse(time.RFC3339Nano, y)
			if errX == nil && errY == nil {
				return tx.Compare(ty)
			}
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
