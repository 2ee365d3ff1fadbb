package workflows

import (
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
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
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rp := worker.NewWorkflowReplayer()
			Register(rp)
			err = rp.ReplayWorkflowHistoryWithOptions(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), h,
				worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id, RunID: "replay"}})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
