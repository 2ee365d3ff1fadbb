// Package promtest runs Debian's Prometheus for tests: it finds its
// binaries (prometheus, promtool), derives svcbridge's alert rules at test
// speed (Faster), starts a Prometheus of its own on a free port and a
// temporary directory, and reads its HTTP API.
package promtest

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// Tool is the path of one of Debian's prometheus package's binaries
// (prometheus, promtool). scripts/test.sh installs the package; without it
// the test skips, saying how to get it, and fails under CI.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found: install Debian's prometheus (apt-get install -y prometheus) or run scripts/test.sh, which does", name)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var promql = parser.NewParser(parser.Options{})

// Faster returns the rule file content with every duration divided by
// factor, so that a test can watch its alerts go pending, fire and
// resolve in seconds: each rule's for: and keep_firing_for:, the ranges
// of its range vectors and subqueries, and a number compared with a
// *_seconds metric (a threshold that is a duration too). Nothing else
// changes: the expressions, labels and annotations are the file's.
func Faster(content []byte, factor int64) ([]byte, error) {
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errs[0]
	}
	scale := func(d time.Duration) time.Duration { return d / time.Duration(factor) }
	for g := range groups.Groups {
		for r := range groups.Groups[g].Rules {
			rule := &groups.Groups[g].Rules[r]
			rule.For = model.Duration(scale(time.Duration(rule.For)))
			rule.KeepFiringFor = model.Duration(scale(time.Duration(rule.KeepFiringFor)))
			expr, err := promql.ParseExpr(rule.Expr)
			if err != nil {
				return nil, err
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				switch n := n.(type) {
				case *parser.MatrixSelector:
					n.Range = scale(n.Range)
				case *parser.SubqueryExpr:
					n.Range, n.Step = scale(n.Range), scale(n.Step)
				case *parser.BinaryExpr:
					if n.Op.IsComparisonOperator() {
						scaleSecondsThreshold(n.LHS, n.RHS, factor)
						scaleSecondsThreshold(n.RHS, n.LHS, factor)
					}
				}
				return nil
			})
			rule.Expr = expr.String()
		}
	}
	return yaml.Marshal(groups)
}

// scaleSecondsThreshold divides number by factor when other selects a
// metric in seconds.
func scaleSecondsThreshold(number, other parser.Expr, factor int64) {
	n, ok := unparen(number).(*parser.NumberLiteral)
	if !ok {
		return
	}
	seconds := false
	parser.Inspect(other, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && strings.HasSuffix(vs.Name, "_seconds") {
			seconds = true
		}
		return nil
	})
	if seconds {
		n.Val = math.Round(n.Val/float64(factor)*1000) / 1000
	}
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}
