package systemtest

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIdleWatches: what an open watch of each list (the console
// keeps three) costs while nothing changes, with 10,000 agents and 1,000
// ready services on PostgreSQL, at rest: the CPU of the process (api,
// worker and the in-process Temporal server) and of the whole machine
// (PostgreSQL with them) over their rates without a watch, each measured
// over 30 s: at rest the process still works in bursts (the Temporal
// server's own), 13 to 42 ms a second over 5 s. Run with
//
//	go test ./systemtest/ -run '^$' -bench IdleWatches -benchtime 1x -timeout 30m
func BenchmarkIdleWatches(b *testing.B) {
	const window = 30 * time.Second
	s := newBenchSystem(b, 1)
	s.seedAgents(10000, "edge")
	s.fillServices(1000)
	// At rest first: the fill's last passes and the worker's resync done.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if measureCPU(time.Second).process < 50 {
			break
		}
	}
	for range b.N {
		idle := measureCPU(window)
		for _, list := range []string{"agents", "services", "microservices"} {
			stop := s.openWatch(list)
			time.Sleep(2 * time.Second) // past the first reads
			open := measureCPU(window)
			stop()
			b.ReportMetric(open.process-idle.process, "process-ms/s-"+list)
			b.ReportMetric(open.machine-idle.machine, "machine-ms/s-"+list)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkBusyWatches: what an open watch of the agents costs while the
// fleet changes, as it does while a fan-out's acknowledgements come in:
// 10,000 agents on PostgreSQL, 100 of them reporting their routers each
// second, the process's CPU with the watch open over its rate without
// (the same reports in both), each over two windows of 30 s. Run with
//
//	go test ./systemtest/ -run '^$' -bench BusyWatches -benchtime 1x -timeout 30m
func BenchmarkBusyWatches(b *testing.B) {
	const window, perSecond = 30 * time.Second, 100
	s := newBenchSystem(b, 1)
	agents := s.seedAgents(10000, "edge")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / perSecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// The seeded agents' tokens are their uuids.
			req, _ := http.NewRequest("PUT", s.url+"/api/v3/agent/router/status",
				strings.NewReader(fmt.Sprintf(`{"version":"\"%d\"","lastUpdated":0,"error":"","failed":[],"tcpListeners":0,"tcpConnectors":0}`, i)))
			req.Header.Set("Authorization", "Bearer "+agents[i%len(agents)])
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusNoContent {
				b.Errorf("report: %v %v", res, err)
				return
			}
			res.Body.Close()
		}
	})
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(5 * time.Second) // the reports' first round settled
	for range b.N {
		// Windows without, with, with and without the watch: the
		// reports' own cost drifts, and weighs alike on both sides.
		var busy, watched cpuRates
		for _, watch := range []bool{false, true, true, false} {
			if !watch {
				busy = busy.plus(measureCPU(window), 0.5)
				continue
			}
			stopWatch := s.openWatch("agents")
			time.Sleep(2 * time.Second) // past the first read
			watched = watched.plus(measureCPU(window), 0.5)
			stopWatch()
		}
		b.ReportMetric(busy.process, "process-ms/s-reports")
		b.ReportMetric(watched.process-busy.process, "process-ms/s-agents-watch")
		b.ReportMetric(watched.machine-busy.machine, "machine-ms/s-agents-watch")
	}
	b.ReportMetric(0, "ns/op")
}

// fillServices creates n external services on 20 clients and waits until
// every one is ready.
func (s benchSystem) fillServices(n int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for i := range next {
				s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
					"name": fmt.Sprintf("svc-%05d", i), "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	s.waitUntil("every service ready", 5*time.Minute, func() (bool, string) {
		var waiting int
		if err := s.db.QueryRow(`SELECT count(*) FROM services WHERE provisioning_status <> 'ready'`).Scan(&waiting); err != nil {
			return false, err.Error()
		}
		return waiting == 0, fmt.Sprintf("%d not ready", waiting)
	})
}

// openWatch opens a watch of the list, reads what it sends until stopped.
func (s benchSystem) openWatch(list string) (stop func()) {
	req, _ := http.NewRequest("GET", s.url+"/api/v3/"+list+"?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		s.t.Fatalf("watch of %s: %v %v", list, res, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(res.Body)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
		}
	}()
	return func() { res.Body.Close(); <-done }
}

// cpuRates are CPU milliseconds a second: this process's and the
// machine's (every process, PostgreSQL's among them).
type cpuRates struct{ process, machine float64 }

// plus is r with w times o added.
func (r cpuRates) plus(o cpuRates, w float64) cpuRates {
	return cpuRates{r.process + w*o.process, r.machine + w*o.machine}
}

// measureCPU measures the CPU rates over d.
func measureCPU(d time.Duration) cpuRates {
	p0, m0, t0 := processCPU(), machineCPU(), time.Now()
	time.Sleep(d)
	s := time.Since(t0).Seconds()
	return cpuRates{(processCPU() - p0).Seconds() * 1000 / s, (machineCPU() - m0).Seconds() * 1000 / s}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the machine's busy time from /proc/stat (user, nice,
// system, irq, softirq, steal), in clock ticks of 10 ms.
func machineCPU() time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	var t [8]int64
	fmt.Sscanf(line, "cpu %d %d %d %d %d %d %d %d", &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7])
	return time.Duration(t[0]+t[1]+t[2]+t[5]+t[6]+t[7]) * 10 * time.Millisecond
}
