package devserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Ports handed out recently in this process, so that two servers starting
// at the same time never get the same "free" port between our probe and
// the server's own listen.
var (
	portsMu     sync.Mutex
	portsHanded = map[int]time.Time{}
)

// freePorts returns n distinct ports that are free on ip now. All probe
// listeners stay open until all n are chosen, so the kernel cannot repeat one.
func freePorts(ip string, n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	now := time.Now()
	for p, t := range portsHanded {
		if now.Sub(t) > time.Minute {
			delete(portsHanded, p)
		}
	}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free ports")
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		p := l.Addr().(*net.TCPAddr).Port
		if _, recent := portsHanded[p]; recent {
			continue
		}
		portsHanded[p] = now
		ports = append(ports, p)
	}
	return ports, nil
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// PortError is Start's error when a port the caller asked for by number
// (Options.FrontendPort, Options.UIPort) cannot be listened on, so that
// the caller can name its own setting for it.
type PortError struct {
	Port int
	UI   bool  // the Web UI's port; else the frontend's
	Err  error // the listen's error (syscall.EADDRINUSE when in use)
}

func (e *PortError) Error() string {
	which := "frontend"
	if e.UI {
		which = "UI"
	}
	return fmt.Sprintf("devserver: %s port %d: %v", which, e.Port, e.Err)
}

func (e *PortError) Unwrap() error { return e.Err }
