package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's profiles at /debug/pprof/ on addr (DEBUG_LISTEN,
// checked to be loopback) until stop; "" serves nothing. A listener of its
// own, not the API's: profiles are for whoever runs the host, not for API
// users, and a CPU profile or trace outlasts the API's write timeout.
func serveDebug(addr string) (at net.Addr, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid setting DEBUG_LISTEN (--debug-listen): %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // heap, allocs, goroutine, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr(), func() { srv.Close() }, nil
}
