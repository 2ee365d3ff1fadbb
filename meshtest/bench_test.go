package meshtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"svcbridge/bench"
)

// The mesh's figures (docs/performance.md, "Through real routers"):
// scripts/mesh-bench.sh runs these benchmarks once each and prints what
// they report. Each runs its own samples whatever b.N is (-benchtime 1x).

// meshSamples is how many services a latency benchmark creates.
const meshSamples = 40

// firstByte is how long until a client on h gets its bytes echoed through
// port: a connection tried every millisecond.
func firstByte(b *testing.B, h *Host, port int, start time.Time) time.Duration {
	b.Helper()
	deadline := start.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, _ := func() (string, error) {
			defer cancel()
			c, err := h.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return "", err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte("x")); err != nil {
				return "", err
			}
			buf := make([]byte, 64)
			n, err := io.ReadAtLeast(c, buf, len("checkout@edge1:x"))
			return string(buf[:n]), err
		}()
		if got == "checkout@edge1:x" {
			return time.Since(start)
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("no first byte through port %d on %s after 30 s", port, h.Name)
	return 0
}

func reportLatencies(b *testing.B, prefix string, lat *bench.Latencies) {
	b.ReportMetric(lat.Percentile(0.5), prefix+"-p50-ms")
	b.ReportMetric(lat.Percentile(0.99), prefix+"-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// benchFleet is the fleet with edge3 besides, an edge agent uplinked to
// the hub, tagged checkout as edge2 (uplinked to core) is; the backend is
// behind edge1, uplinked to the hub.
func benchFleet(b *testing.B) (*fleet, *Host) {
	f := newFleet(b)
	edge3 := f.m.Host("edge3", nil)
	token := f.p.Agent(map[string]any{"name": "edge3", "routerMode": "edge", "host": edge3.IP, "upstreamRouters": []string{"hub"},
		"tags": []string{tagPrefix + "checkout"}})
	StartNode(b, edge3, f.p, token)
	f.p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	return f, edge3
}

// firstBytes measures firstByte on the hub's edge (edge3) and behind an
// interior agent (edge2) at once.
func firstBytes(b *testing.B, f *fleet, edge3 *Host, port int, start time.Time, viaHub, viaCore *bench.Latencies) {
	var wg sync.WaitGroup
	wg.Go(func() { viaHub.Add(firstByte(b, edge3, port, start), nil) })
	wg.Go(func() { viaCore.Add(firstByte(b, f.edge2, port, start), nil) })
	wg.Wait()
}

// BenchmarkMeshCreateToFirstByte: from a service's POST to the first byte
// echoed, through the mesh, to a client on a tagged edge agent: edge3,
// uplinked to the hub (edge3 -> hub -> edge1), and edge2, uplinked to an
// interior agent (edge2 -> core -> hub -> edge1).
func BenchmarkMeshCreateToFirstByte(b *testing.B) {
	f, edge3 := benchFleet(b)
	b.ResetTimer()
	var viaHub, viaCore bench.Latencies
	for i := range meshSamples {
		start := time.Now()
		var svc struct {
			BridgePort int `json:"bridgePort"`
		}
		f.p.Call(http.MethodPost, "/services", map[string]any{"name": fmt.Sprintf("c%d", i), "type": "microservice",
			"resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}}, http.StatusCreated, &svc)
		firstBytes(b, f, edge3, svc.BridgePort, start, &viaHub, &viaCore)
	}
	reportLatencies(b, "hub-edge", &viaHub)
	reportLatencies(b, "core-edge", &viaCore)
}

// BenchmarkMeshTagEditToFirstByte: from a service's tag edit to the first
// byte echoed to a client on the agents the new tag selects.
func BenchmarkMeshTagEditToFirstByte(b *testing.B) {
	f, edge3 := benchFleet(b)
	var ports []int
	for i := range meshSamples {
		name := fmt.Sprintf("t%d", i)
		var svc struct {
			BridgePort int `json:"bridgePort"`
		}
		f.p.Call(http.MethodPost, "/services", map[string]any{"name": name, "type": "microservice",
			"resource": "orders/checkout", "targetPort": 8080, "tags": []string{"elsewhere"}}, http.StatusCreated, &svc)
		ports = append(ports, svc.BridgePort)
		f.ready(name)
	}
	f.reaches(ports[len(ports)-1], "checkout@edge1:", f.hub)
	b.ResetTimer()
	var viaHub, viaCore bench.Latencies
	for i, port := range ports {
		start := time.Now()
		f.p.Call(http.MethodPatch, fmt.Sprintf("/services/t%d", i), map[string]any{"tags": []string{"checkout"}}, http.StatusNoContent, nil)
		firstBytes(b, f, edge3, port, start, &viaHub, &viaCore)
	}
	reportLatencies(b, "hub-edge", &viaHub)
	reportLatencies(b, "core-edge", &viaCore)
}

// meshBytes is how much a throughput sample sends (and reads back).
const meshBytes = 100 << 20

// echoRate sends meshBytes to addr from h and reads them back, returning
// MB/s each way.
func echoRate(b *testing.B, h *Host, addr string, prefix int) float64 {
	b.Helper()
	c, err := h.Dial(context.Background(), addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := io.CopyN(io.Discard, c, int64(prefix)); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for sent := 0; sent < meshBytes; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if _, err := io.CopyN(io.Discard, c, meshBytes); err != nil {
		b.Fatal(err)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return float64(meshBytes) / (1 << 20) / time.Since(start).Seconds()
}

// BenchmarkMeshThroughput: 100 MB echoed through the hub's listener and
// edge1's connector, as a ratio of the same through a direct TCP
// connection between the same two namespaces, measured alternately.
func BenchmarkMeshThroughput(b *testing.B) {
	f := newFleet(b)
	f.p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	port := f.service(map[string]any{"name": "bulk", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080})
	f.reaches(port, "checkout@edge1:", f.hub)
	f.edge1.Echo(net.JoinHostPort(f.edge1.IP, "9999"), "checkout@edge1:")
	b.ResetTimer()
	var mesh, direct []float64
	for range 3 {
		mesh = append(mesh, echoRate(b, f.hub, fmt.Sprintf("127.0.0.1:%d", port), len("checkout@edge1:")))
		direct = append(direct, echoRate(b, f.hub, net.JoinHostPort(f.edge1.IP, "9999"), len("checkout@edge1:")))
	}
	slices.Sort(mesh)
	slices.Sort(direct)
	b.ReportMetric(mesh[1], "mesh-MB/s")
	b.ReportMetric(direct[1], "direct-MB/s")
	b.ReportMetric(mesh[1]/direct[1], "ratio")
	b.ReportMetric(0, "ns/op")
}
