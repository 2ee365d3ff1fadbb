package devserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI runs the Web UI in a goroutine (its Start blocks) and waits until
// it answers HTTP, so that Stop never races a listener still being opened.
func (s *Server) startUI(ctx context.Context, o Options, frontend string) error {
	host := o.IP
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // the UI joins host and port with a plain ":"
	}
	s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                o.UIPort,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true}, // plain HTTP
		HideLogs:            true,
		DisableNewsFetch:    true, // no outside network on these machines
	}))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		if err := s.ui.Start(); err != nil {
			o.Logger.Error("temporal UI stopped", "error", err)
		}
	}()
	s.uiURL = "http://" + net.JoinHostPort(o.IP, strconv.Itoa(o.UIPort))

	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.uiURL+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: UI %s not ready: %w (last error: %v)", s.uiURL, ctx.Err(), err)
		case <-s.uiDone:
			return fmt.Errorf("devserver: UI on %s exited during start-up", s.uiURL)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
