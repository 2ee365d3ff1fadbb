package systemtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	enumspb "go.temporal.io/api/enums/v1"
)

// TestWebUIFindUnderstandRetry is an operator's round in the real Temporal
// Web UI that `svcbridge dev` serves, in headless Chromium: find the failed
// service through the failed filter, read the failure on the workflow's
// first screen, fix the cause, send the reconcile signal from the UI, see
// it ready. Screenshots go to $SVCBRIDGE_SCREENSHOTS (else a temporary
// directory), logged.
func TestWebUIFindUnderstandRetry(t *testing.T) {
	browser := chromium(t)
	s, dev := startDevSystem(t, 0)
	reason := failingService(s)
	id := s.wf.Service("checkout")
	shots := os.Getenv("SVCBRIDGE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	t.Logf("screenshots in %s", shots)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// waitText reloads page until its text holds want (visibility and the
	// UI's polling lag), then saves a screenshot.
	waitText := func(page, want, shot string) {
		t.Helper()
		var text string
		for {
			err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady(chromedp.CSS("body")), chromedp.Sleep(2*time.Second))
			if err == nil {
				text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			}
			if err == nil && strings.Contains(text, want) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never showed %q: %v; it showed:\n%s", page, want, err, text)
			}
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(shots, shot)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", shot, path)
	}
	ui := dev.UIURL() + "/namespaces/" + dev.Namespace() + "/workflows"
	page := ui + "/" + url.PathEscape(id)

	// Find: the failed filter lists it.
	waitText(ui+"?query="+url.QueryEscape(`ProvisioningStatus="failed"`), id, "1-failed-filter.png")
	// Understand: the failure, as provisioningError words it, on the first
	// screen of the workflow page.
	waitText(page, reason, "2-failure-on-workflow-page.png")

	// Retry: fix the cause, then signal reconcile from the UI.
	fixService(s)
	before := s.signalCount(id)
	err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[aria-controls="workflow-actions"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="signal-button"]`)),
		chromedp.SendKeys(chromedp.ID("signal-name"), "reconcile"),
		chromedp.Click(chromedp.CSS(`dialog[open] [data-testid="confirm-modal-button"]`)),
	)
	if err != nil {
		t.Fatalf("sending the signal from the UI: %v", err)
	}
	s.waitFor("the UI's reconcile signal in the history", 30*time.Second, func() (bool, string) {
		n := s.signalCount(id)
		return n > before, fmt.Sprintf("%d reconcile signals, %d before", n, before)
	})
	s.waitStatus("checkout", "ready")
	waitText(ui+"?query="+url.QueryEscape(`ProvisioningStatus="ready"`), id, "3-ready-filter.png")
}

// signalCount counts the reconcile signals in a workflow's history.
func (s *system) signalCount(id string) int {
	s.t.Helper()
	n := 0
	iter := s.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		if e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == "reconcile" {
			n++
		}
	}
	return n
}

// chromium finds Debian's chromium: scripts/test.sh installs it; without
// it the test skips outside CI and fails in CI.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "chromium not found: install it (apt-get install -y chromium) or run scripts/test.sh, which does"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
