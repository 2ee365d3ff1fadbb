// Package porttest hands tests ports for the processes they start.
package porttest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// handedOut are the ports Free returned, so two settings of one process
// differ.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Free is a free port between 20000 and 32000: below the kernel's
// ephemeral ports (32768 up), which any outgoing connection may take in
// the moment between a test's choosing a port and its process binding it
// (a dev once failed to start on "address already in use"), and below
// 32768, since Temporal keeps its services' ports in a smallint column
// (cluster_membership).
func Free(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if handedOut.ports[p] {
			continue
		}
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			ln.Close()
			handedOut.ports[p] = true
			return p
		}
	}
	t.Fatal("no free port between 20000 and 32000")
	return 0
}
