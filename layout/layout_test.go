package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFoldersImportOneWay: drawn by top-level folder, the import graph of
// the whole module, tests' imports included, has no cycle: no folder
// imports one that imports it back, directly or through others.
func TestFoldersImportOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "svcbridge/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	edges := map[string]map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from := folder(p.ImportPath)
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if to := folder(imp); strings.HasPrefix(imp, "svcbridge/") && to != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][to] = true
			}
		}
	}
	for from := range edges {
		if path := pathBack(edges, from, from, map[string]bool{}); path != nil {
			t.Errorf("folders import in a cycle: %s", strings.Join(append([]string{from}, path...), " -> "))
		}
	}
}

// folder is an import path's top-level folder in the module.
func folder(importPath string) string {
	parts := strings.Split(importPath, "/")
	if len(parts) < 2 {
		return importPath
	}
	return parts[1]
}

// pathBack returns a path of imports from at back to start, nil if none.
func pathBack(edges map[string]map[string]bool, start, at string, seen map[string]bool) []string {
	for to := range edges[at] {
		if to == start {
			return []string{to}
		}
		if !seen[to] {
			seen[to] = true
			if p := pathBack(edges, start, to, seen); p != nil {
				return append([]string{to}, p...)
			}
		}
	}
	return nil
}
