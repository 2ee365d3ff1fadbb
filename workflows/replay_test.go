package workflows

import (
	"log/slog"
	"path/filepath"
	"testing"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayCapturedHistories replays a captured history of each workflow
// type against today's code: a change that would break running workflows
// (a command added, removed or reordered without workflow.GetVersion)
// fails here. The README says how to capture new histories.
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
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
