// Package proctest runs the processes a test needs (the svcbridge binary,
// routers) and stops them when the test ends.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Svcbridge builds cmd/svcbridge once per test binary and returns its path.
func Svcbridge(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "svcbridge-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "svcbridge")
		out, err := exec.Command("go", "build", "-o", binPath, "svcbridge/cmd/svcbridge").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Proc is a running process.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	out  *Buffer
	done chan struct{}
	err  error
}

// Start runs args[0] with args[1:] and env added to the test's
// environment, until the test ends (or Stop). Its output is kept, and
// logged when the test fails.
func Start(t testing.TB, name string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	p := &Proc{Name: name, cmd: cmd, out: &Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s's output (last 60 lines):\n%s", name, p.Tail(60))
		}
	})
	return p
}

// Done is closed when the process has ended; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended, once Done is closed.
func (p *Proc) Err() error { return p.err }

// Exited reports whether the process ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process with SIGTERM, as a service manager would.
func (p *Proc) Stop() { p.signal(syscall.SIGTERM) }

// Kill ends the process with SIGKILL: no clean shutdown.
func (p *Proc) Kill() { p.signal(syscall.SIGKILL) }

func (p *Proc) signal(sig syscall.Signal) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Output is everything the process wrote.
func (p *Proc) Output() string { return p.out.String() }

// Tail is the last n lines of the process's output.
func (p *Proc) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Buffer is output that goroutines (a process's, a logger's) write while
// the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor polls cond until it holds, or fails the test after timeout with
// what cond last said; it returns how long it waited.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
	return 0
}
