package promtest

import (
	"log/slog"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

func TestFaster(t *testing.T) {
	for _, c := range []struct {
		name               string
		expr, for_         string
		wantExpr, wantFor_ string
	}{
		{"for", `max(x_total) > 0`, "15m", `max(x_total) > 0`, "3s"},
		{"no for", `up == 0`, "", `up == 0`, "0s"},
		{"range", `sum by (router) (increase(x_total[1h])) > 0`, "", `sum by (router) (increase(x_total[12s])) > 0`, "0s"},
		{"subquery", `max_over_time(rate(x_total[5m])[1h:1m]) > 1`, "5m", `max_over_time(rate(x_total[1s])[12s:200ms]) > 1`, "1s"},
		{"seconds threshold", `max(age_seconds) > 900`, "5m", `max(age_seconds) > 3`, "1s"},
		{"seconds threshold on the left", `(900) <= max(age_seconds)`, "", `(3) <= max(age_seconds)`, "0s"},
		{"a count is no duration", `max(agents_unacknowledged) > 900`, "", `max(agents_unacknowledged) > 900`, "0s"},
		{"arithmetic is no threshold", `age_seconds * 60 > 0`, "", `age_seconds * 60 > 0`, "0s"},
		{"both branches of or", `max(p) == 0 or absent(p)`, "5m", `max(p) == 0 or absent(p)`, "1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			forLine := ""
			if c.for_ != "" {
				forLine = "\n        for: " + c.for_
			}
			in := "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: '" + c.expr + "'" + forLine +
				"\n        labels: {severity: warning}\n        annotations: {summary: 'over {{ $value }} for 15 minutes'}\n"
			out, err := Faster([]byte(in), 300)
			if err != nil {
				t.Fatal(err)
			}
			groups, errs := rulefmt.Parse(out, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
			if len(errs) > 0 {
				t.Fatalf("Faster's output does not parse: %v\n%s", errs, out)
			}
			r := groups.Groups[0].Rules[0]
			if r.Expr != c.wantExpr || r.For.String() != c.wantFor_ {
				t.Errorf("expr %q for %s, want %q for %s", r.Expr, r.For, c.wantExpr, c.wantFor_)
			}
			if r.Alert != "A" || r.Labels["severity"] != "warning" || r.Annotations["summary"] != "over {{ $value }} for 15 minutes" {
				t.Errorf("Faster changed more than durations: %+v", r)
			}
		})
	}
	if _, err := Faster([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: 'max('\n"), 300); err == nil {
		t.Error("Faster took a rule that does not parse")
	}
}
