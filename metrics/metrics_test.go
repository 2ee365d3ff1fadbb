package metrics_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"svcbridge/buildinfo"
	"svcbridge/metrics"
	"svcbridge/service"
)

// testBuildLabels are svcbridge_build_info's label values, in label name order.
func testBuildLabels() string { return runtime.Version() + "," + buildinfo.Version() }

// vectors are the metrics package's vectors whose label values are known,
// by the name the recording code uses.
var vectors = map[string]*prometheus.MetricVec{
	"Reconciles":   metrics.Reconciles.MetricVec,
	"RouterWrites": metrics.RouterWrites.MetricVec,
	"Repairs":      metrics.Repairs.MetricVec,
	"KubeCalls":    metrics.KubeCalls.MetricVec,
	"ScrapeErrors": metrics.ScrapeErrors.MetricVec,
}

// constants resolves the identifiers recording code passes as label values.
var constants = map[string]string{
	"service.StatusReady": service.StatusReady, "service.StatusFailed": service.StatusFailed,
	"metrics.RouterAgent": metrics.RouterAgent, "metrics.RouterHubConfigMap": metrics.RouterHubConfigMap,
	"metrics.RouterKubeService": metrics.RouterKubeService,
}

// labelValue is the string an argument always is, or false.
func labelValue(e ast.Expr) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok {
			s, ok := constants[x.Name+"."+v.Sel.Name]
			return s, ok
		}
	}
	return "", false
}

// TestRecordedLabelsAreKnown reads every call that records into a vector
// with known labels (metrics.X.WithLabelValues, and activities' kubeCall
// wrapper) in svcbridge's code: each records label values that
// metrics.Known creates at start, so no series appears only on its first
// event.
func TestRecordedLabelsAreKnown(t *testing.T) {
	fset := token.NewFileSet()
	calls := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "kubeCall" {
				return false // its callers' arguments are checked
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var vec string
			var args []ast.Expr
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr: // metrics.X.WithLabelValues(...)
				x, ok := fn.X.(*ast.SelectorExpr)
				if !ok || fn.Sel.Name != "WithLabelValues" {
					return true
				}
				if pkg, ok := x.X.(*ast.Ident); !ok || pkg.Name != "metrics" {
					return true
				}
				vec, args = x.Sel.Name, call.Args
			case *ast.Ident: // kubeCall(verb, resource, err) records ok or error
				if fn.Name != "kubeCall" || len(call.Args) != 3 {
					return true
				}
				vec, args = "KubeCalls", call.Args[:2]
			default:
				return true
			}
			mv, known := vectors[vec]
			if !known {
				return true // HTTP's: created per route by the API
			}
			calls++
			where := fset.Position(call.Pos()).String()
			var values []string
			for _, a := range args {
				v, ok := labelValue(a)
				if !ok {
					t.Errorf("%s: metrics.%s gets a label value that is not a constant this test knows", where, vec)
					return true
				}
				values = append(values, v)
			}
			if !slices.ContainsFunc(metrics.Known[mv], func(k []string) bool { return slices.Equal(k[:len(values)], values) }) {
				t.Errorf("%s: metrics.%s records %v, which metrics.Known does not create at start", where, vec, values)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 8 {
		t.Fatalf("found only %d recording calls: is the walk still reading the code?", calls)
	}
}
