package systemtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebUIFindUnderstandRetry is an operator's round in the real Temporal
// Web UI that `svcbridge dev` serves, in headless Chromium: find the failed
// service through the failed filter, see the failure in red with its
// reason on the workflow page's first screen, without opening a tab, fix
// the cause, send the reconcile signal from the UI (recorded as a reconcile
// request), see it ready. Screenshots go to $SVCBRIDGE_ARTIFACTS (else a
// temporary directory); their paths are logged.
func TestWebUIFindUnderstandRetry(t *testing.T) {
	browser := chromium(t)
	s, dev := startDevSystem(t, 0)
	reason := failingService(s)
	id := s.wf.Service("checkout")
	b := newBrowser(t, browser)

	list := dev.UIURL() + "/namespaces/" + dev.Namespace() + "/workflows"
	// Find: the failed filter lists it.
	b.open(list+"?query="+url.QueryEscape(`ProvisioningStatus="failed"`), id, "1-failed-filter.png")
	// Understand: the workflow page's first screen, its timeline, shows
	// the failed passes as red failure events, and the wait after the last
	// one says what failed, as provisioningError words it.
	b.open(list+"/"+url.PathEscape(id), reason, "2-failure-first-screen.png")
	failed, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(
		'#event-history-timeline-graph g[role="button"]')].filter(g => g.querySelector('rect.dot.Failed')).map(g =>
		g.textContent.trim() + " fill=" + getComputedStyle(g.querySelector('rect.dot.Failed')).fill)`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(failed, redFailure) {
		t.Errorf("no red ReconcileService failure on the timeline: %q", failed)
	}

	// Retry: fix the cause (the agent change also signals a reconcile of
	// its own), then send the reconcile signal from the UI, whose signals
	// carry the identity "webui".
	fixService(s)
	b.sendSignal("reconcile")
	s.waitFor("the Web UI's reconcile signal in the history", 30*time.Second, func() (bool, string) {
		n := s.signalsFrom(id, "webui")
		return n == 1, fmt.Sprintf("%d reconcile signals from the Web UI", n)
	})
	s.waitStatus("checkout", "ready")
	s.waitSignalledEvent("checkout")
	b.open(list+"?query="+url.QueryEscape(`ProvisioningStatus="ready"`), id, "4-ready-filter.png")
}

// redFailure reports whether a timeline row (its text, then its failed
// dot's fill) is a ReconcileService failure drawn in red.
func redFailure(row string) bool {
	var r, g, b int
	text, fill, _ := strings.Cut(row, " fill=")
	_, err := fmt.Sscanf(fill, "rgb(%d, %d, %d)", &r, &g, &b)
	return strings.HasPrefix(text, "ReconcileService") && err == nil && r > 200 && g < 120 && b < 120
}

// browser is a headless Chromium tab whose actions all end by deadline.
type browser struct {
	t     testing.TB
	ctx   context.Context
	shots string
}

func newBrowser(t testing.TB, path string) *browser {
	t.Helper()
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel)
	// Start the browser on ctx itself: a shorter context of a first action
	// would take the browser down with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	shots := os.Getenv("SVCBRIDGE_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx, shots: shots}
}

// open loads page until its text holds want (visibility and the UI's own
// polling lag behind: the list does not refresh by itself), then saves a
// screenshot named shot unless it is "".
func (b *browser) open(page, want, shot string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The UI keeps connections open: do not wait for the load event.
		nctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		_ = chromedp.Do(nctx, chromedp.Navigate(page))
		cancel()
		text, ok := b.poll(10*time.Second, want)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			b.screenshot("timeout.png")
			b.t.Fatalf("%s never showed %q; it showed:\n%s", page, want, text)
		}
	}
	if shot != "" {
		b.screenshot(shot)
	}
}

// see waits until the page's visible text holds every one of wants.
func (b *browser) see(wants ...string) {
	b.t.Helper()
	if text, ok := b.poll(30*time.Second, wants...); !ok {
		b.screenshot("timeout.png")
		b.t.Fatalf("the page never showed %q; it showed:\n%s", wants, text)
	}
}

// poll reads the page's visible text until it holds every one of wants or
// timeout passes, and returns the last text read.
func (b *browser) poll(timeout time.Duration, wants ...string) (string, bool) {
	var text string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		tctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		t, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		cancel()
		if err == nil {
			text = t
			if containsAll(text, wants) {
				return text, true
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return text, false
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// sendSignal sends a signal with no input through the workflow page's
// "Send a Signal" action, whose dialog offers the workflow's signal names.
func (b *browser) sendSignal(name string) {
	b.t.Helper()
	b.click(`button[aria-controls="workflow-actions"]`, "")
	b.click(`[data-testid="signal-button"]`, "")
	// A click that lands while the list still opens is lost: pick again
	// until the dialog shows the name.
	picked := func() bool {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('dialog[open] input#signal-select')?.value ?? ""`))
		return err == nil && v == name
	}
	for try := 0; !picked(); try++ {
		if try == 5 {
			b.screenshot("failed-signal-name.png")
			b.t.Fatalf("the Send a Signal dialog does not take the signal name %q", name)
		}
		b.click(`dialog[open] [data-testid="signal-select-button"]`, "")
		b.click(`dialog[open] [role="option"]`, name)
	}
	b.screenshot("3-send-a-signal.png")
	b.click(`dialog[open] [data-testid="confirm-modal-button"]`, "")
}

// click clicks the first element that matches css, is on screen and
// enabled, and, unless text is "", whose text is text. The UI renders some
// parts twice (one hidden), and fades dialogs and menus in: an element is
// clicked once it and its ancestors are fully opaque.
func (b *browser) click(css, text string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	find := fmt.Sprintf(`[...document.querySelectorAll(%q)].find(e => {
		if (!e.checkVisibility() || e.disabled || (%q !== "" && e.textContent.trim() !== %q)) return false;
		for (let a = e; a; a = a.parentElement) if (getComputedStyle(a).opacity !== "1") return false;
		return true;
	})`, css, text, text)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.JSPath(find), chromedp.NodeVisible)); err != nil {
		b.screenshot("failed-click.png")
		b.t.Fatalf("click %s %q: %v", css, text, err)
	}
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// chromium finds Debian's chromium: scripts/test.sh installs it; without
// it the test skips outside CI and fails in CI.
func chromium(t testing.TB) string {
	t.Helper()
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
