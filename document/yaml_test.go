package document

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// yamlNodes is how many nodes yaml.v3 makes of body, its document nodes
// aside, over the documents it parses before an error.
func yamlNodes(body []byte) int {
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		c := 1
		if n.Kind == yaml.DocumentNode {
			c = 0
		}
		for _, child := range n.Content {
			c += count(child)
		}
		return c
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	total := 0
	for range 64 {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return total
		}
		total += count(&doc)
	}
	return total
}

func TestYAMLValuesBoundTheNodes(t *testing.T) {
	docs := []string{
		"abc", "[0,0,0]", "[]", "{}", "a: 1\nb: 2\n", "a:\n  - x\n  - y\n", "a:\n  b: 1\n",
		"- a: 1\n  b: 2\n", "- - - 0\n", "- \n- \n", "{a: 1}", "[a: 1, b: 2]", "? a\n", "? a\n: b\n",
		"? - a\n  - b\n: c\n", "a\n---\nb\n", "--- a\n", `{"a":1,"b":[2,3]}`, "a: &x [1, 2]\nb: *x\n",
		"# a comment, with: [commas]\nkind: Service\n", "a: |\n  # text, not a comment\n  b: c\n",
		"a: \"x\n  # still text\n  y\"\nb: [1,2]\n", "{0,000}", "[{a, b}, c]", "[?{0}]",
	}
	for _, d := range docs {
		if nodes, values := yamlNodes([]byte(d)), yamlValues([]byte(d)); nodes > values+1 {
			t.Errorf("%q: yaml.v3 makes %d nodes, yamlValues counts %d", d, nodes, values)
		}
	}
}

// No document has more nodes than yamlValues counts, plus its root: the
// budget cannot be got round. `go test ./document -fuzz FuzzYAMLValues`.
func FuzzYAMLValues(f *testing.F) {
	for _, seed := range []string{
		"kind: Service\nmetadata:\n  name: web\nspec:\n  tags: [a, b]\n", "- [a, {b: c}]\n- ? d\n",
		"a: 'x, #y'\n# [0,0]\nb: \"[\n#0,0]\"\n", "--- |\n  a: [\n...\n---\n[*a, &b c]\n", "\t#x\n[0,\n #,0\n0]",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if nodes, values := yamlNodes(body), yamlValues(body); nodes > values+1 {
			t.Fatalf("%q: yaml.v3 makes %d nodes, yamlValues counts %d", body, nodes, values)
		}
	})
}

// An upload of more values than any document needs is refused before it
// is parsed; the largest real documents are well within the budget.
func TestReadYAMLValueBudget(t *testing.T) {
	read := func(body string) error {
		_, err := ReadYAML([]byte(body), []string{"Service"}, func(*yaml.Node) (int, error) { return 0, nil })
		return err
	}
	tags := make([]string, 64)
	for i := range tags {
		tags[i] = "  - region-" + strings.Repeat("x", i%7) + "\n"
	}
	big := "# every tag an edge may have, with: a comment\nkind: Service\nmetadata:\n  name: web\nspec:\n  tags:\n" + strings.Join(tags, "")
	if err := read(big); err != nil {
		t.Fatalf("a service with 64 tags: %v", err)
	}
	junk := "kind: Service\nmetadata:\n  junk: [" + strings.Repeat("0,", MaxYAMLValues) + "0]\n"
	wantError(t, read(junk), "Error parsing YAML: more than 512 keys and items")
}
