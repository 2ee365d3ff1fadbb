package systemtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"svcbridge/porttest"
	"svcbridge/proctest"
	"svcbridge/routertest"
)

// The README's walkthrough and API examples, run as a reader would: each
// ```sh block followed by an output block, in turn, in one directory
// against a fresh `svcbridge dev`, its output held to that block, so that
// the README cannot drift from what svcbridge prints.

// readmeExample is one ```sh block of the README and the output block
// after it.
type readmeExample struct {
	script, output string
	line           int // of the script in README.md
}

// readmeExamples are the examples of the section headed title.
func readmeExamples(t *testing.T, readme, title string) []readmeExample {
	t.Helper()
	start := strings.Index(readme, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("README.md has no section %q", title)
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	base := strings.Count(readme[:start+1], "\n") + 1
	fence := regexp.MustCompile("(?ms)^```sh\n(.*?)^```\n```\n(.*?)^```$")
	var out []readmeExample
	for _, m := range fence.FindAllStringSubmatchIndex(section, -1) {
		out = append(out, readmeExample{script: section[m[2]:m[3]], output: section[m[4]:m[5]],
			line: base + strings.Count(section[:m[2]], "\n")})
	}
	return out
}

// readmeShape is the regular expression an output block stands for:
// what varies from run to run (uuids, tokens the README cuts, ages, the
// dev ports) is any value of its kind, and column padding any run of
// spaces.
func readmeShape(block string) *regexp.Regexp {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		re := regexp.QuoteMeta(strings.TrimRight(l, " "))
		for _, r := range []struct{ from, to string }{
			{`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, `[0-9a-f-]{36}`},
			{`[0-9a-f]{8}…`, `[0-9a-f]{64}`},
			{`\d+s ago`, `\d+[smhd] ago`},
			// An event's age, at the start of a row of describe's Events,
			// counts the event's repeats when it repeated.
			{`^(\s+)\d+s(\s{2,})`, `${1}\d+[smhd]( \(x\d+ over \d+[smhd]\))?${2}`},
			{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)`},
			{`127\\\.0\\\.0\\\.1:8233`, `127\.0\.0\.1:\d+`},
			{`  +`, `\s+`},
		} {
			re = regexp.MustCompile(r.from).ReplaceAllString(re, r.to)
		}
		lines = append(lines, re)
	}
	return regexp.MustCompile(`^` + strings.Join(lines, `\n`) + `\n?$`)
}

func TestREADMEWalkthrough(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	walkthrough := readmeExamples(t, string(readme), "Five-minute walkthrough")
	apiExamples := readmeExamples(t, string(readme), "API")
	if len(walkthrough) < 4 || len(apiExamples) < 1 {
		t.Fatalf("the walkthrough has %d examples with output and the API section %d, want at least 4 and 1", len(walkthrough), len(apiExamples))
	}

	// svcbridge on PATH, dev in the reader's directory on free ports; the
	// CLI finds it through the context dev saves.
	work, bin, cfg := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Symlink(proctest.Svcbridge(t), filepath.Join(bin, "svcbridge")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfg, "DATABASE_URL=", "AUTH_TOKENS_FILE="}
	apiPort := porttest.Free(t)
	dev := start(t, env, "dev", "--data-dir", filepath.Join(work, ".svcbridge"), "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--temporal-port", fmt.Sprint(porttest.Free(t)), "--ui-port", fmt.Sprint(porttest.Free(t)))
	waitWorkerPolling(t, fmt.Sprintf("http://127.0.0.1:%d", apiPort), dev)

	// A skupper router on PATH for the walkthrough's last example, where
	// this machine has one (the test command builds it).
	router, haveRouter := routertest.Path()
	if haveRouter {
		if err := os.Symlink(router, filepath.Join(bin, "skrouterd")); err != nil {
			t.Fatal(err)
		}
	}
	examples := walkthrough
	if _, err := exec.LookPath("curl"); err == nil {
		examples = append(examples, apiExamples...)
	} else {
		t.Log("curl is not installed: the API section's examples are not run")
	}
	// The README's curl examples name dev's default address.
	addr := fmt.Sprintf("127.0.0.1:%d", apiPort)
	for _, ex := range examples {
		if strings.Contains(ex.script, "skrouterd") && !haveRouter {
			if os.Getenv("CI") != "" {
				t.Fatalf("README.md:%d needs skrouterd: build it with ../shared/router/build.sh", ex.line)
			}
			t.Logf("README.md:%d is not run: no skupper router on this machine (../shared/router/build.sh builds one)", ex.line)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		sh := exec.CommandContext(ctx, "bash", "-c", strings.ReplaceAll(ex.script, "127.0.0.1:8080", addr))
		sh.Dir, sh.Env = work, env
		// What an example leaves running (a router, its router side)
		// stops with the test: the process group of its shell.
		sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, _ := sh.CombinedOutput() // a failure shows in the output
		cancel()
		if sh.Process != nil {
			pgid := sh.Process.Pid
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGTERM) })
		}
		if !readmeShape(ex.output).Match(out) {
			t.Errorf("README.md:%d prints\n%s\nwhere the README shows\n%s", ex.line, out, ex.output)
		}
	}
}
