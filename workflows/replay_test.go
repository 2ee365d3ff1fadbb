package workflows

import (
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svcbridge/reconcile"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayCapturedHistories replays a captured history of each workflow
// type against today's code: a change that would break running workflows
// (a command added, removed or reordered without workflow.GetVersion)
// fails here. A file is named after its workflow ID, path-escaped, with an
// optional @label (service%2Fcheckout@v1.json); docs/development.md says how to
// capture new ones.
func TestReplayCapturedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %v; want a history of each of the 4 workflow types", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			name, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".json"), "@")
			id, err := url.PathUnescape(name)
			if err != nil {
				t.Fatal(err)
			}
			h := readHistory(t, f)
			rp := worker.NewWorkflowReplayer()
			Register(rp, Timing{})
			err = rp.ReplayWorkflowHistoryWithOptions(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), h,
				worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id, RunID: "replay"}})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEveryChangeHasItsHistories: each workflow.GetVersion change has a
// recorded history of a run begun before it (no marker of it) and one of a
// run that took it (its marker, at its version), which
// TestReplayCapturedHistories replays; and the workflows ask GetVersion
// only through takes, of a change that reconcile.Changes lists.
func TestEveryChangeHasItsHistories(t *testing.T) {
	for _, c := range reconcile.Changes {
		if v, marked := versionMarker(t, readHistory(t, filepath.Join("testdata", c.Before)), c.ID); marked {
			t.Errorf("change %s: %s, its history from before it, holds its marker (version %d)", c.ID, c.Before, v)
		}
		if v, marked := versionMarker(t, readHistory(t, filepath.Join("testdata", c.After)), c.ID); !marked || v != workflow.Version(c.Version) {
			t.Errorf("change %s: %s, its history from after it, holds version %d (marked %v), want %d", c.ID, c.After, v, marked, c.Version)
		}
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		calls += strings.Count(string(b), "workflow.GetVersion(")
	}
	if calls != 1 {
		t.Errorf("workflow.GetVersion is called in %d places; every change goes through takes, with a reconcile.Change", calls)
	}
}

func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	r, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// versionMarker is the version a history recorded for change id, if any.
func versionMarker(t *testing.T, h *historypb.History, id string) (v workflow.Version, marked bool) {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	for _, e := range h.GetEvents() {
		m := e.GetMarkerRecordedEventAttributes()
		var change string
		if m.GetMarkerName() != "Version" || dc.FromPayloads(m.GetDetails()["change-id"], &change) != nil || change != id {
			continue
		}
		if err := dc.FromPayloads(m.GetDetails()["version"], &v); err != nil {
			t.Fatal(err)
		}
		return v, true
	}
	return workflow.DefaultVersion, false
}
