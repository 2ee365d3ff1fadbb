package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"svcbridge/wire"
)

// statusView is `status -o json|yaml`.
type statusView struct {
	Services []statusService `json:"services"`
	Agents   []statusAgent   `json:"agents"`
	// Worker is the server's word on the workers when it is not "ok":
	// "no worker is polling task queue X" explains services left pending.
	Worker string `json:"worker,omitempty"`
	// noWorker: the server counted no worker polling its task queue.
	noWorker bool
}

type statusService struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Backend    string `json:"backend"`
	BridgePort int    `json:"bridgePort"`
	Endpoint   string `json:"endpoint"`
	// AllowedFrom is who may reach the endpoint (see allowedFrom).
	AllowedFrom string `json:"allowedFrom,omitempty"`
	Status      string `json:"status"`
	Error       string `json:"error,omitempty"`
	// Message is what the status alone does not say (the server's
	// provisioningMessage): why it waits, or that it has no endpoint.
	Message string `json:"message,omitempty"`
}

type statusAgent struct {
	Name          string   `json:"name"`
	RouterMode    string   `json:"routerMode"`
	DefaultRouter bool     `json:"defaultRouter"`
	OpenPorts     []string `json:"openPorts"`
	// RouterError says why the open ports are unknown.
	RouterError string `json:"routerError,omitempty"`
	// Router is what its router side last reported (absent: none).
	Router *wire.AgentRouter `json:"router,omitempty"`
}

func statusCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every service and each agent's open bridge ports",
		Long: `Show the whole installation at a glance, as 'juju status' does: one table of the
services (type, backend, bridgePort, endpoint, who may reach it, status) and one of the agents with
the bridge ports their routers listen on ("open-ports": the ports of the
tcpListeners in each agent's router config, sorted, as port/tcp; three or more
consecutive ports as one range, 10024-10223/tcp; -o json lists every port).

On the Kubernetes control plane ALLOWED-FROM shows who may reach a service's
endpoint, as 'juju status' shows exposure: a LoadBalancer's
spec.kubernetes.loadBalancerSourceRanges ("any" without them), "any" for a
NodePort, "cluster" for a ClusterIP.

Failed services are listed again below the tables with their provisioningError,
and when no worker polls the task queue (so services stay pending) a last line
says so. As a health check would, status exits 3 when any service is failed,
and 6 when no worker polls the task queue (after printing everything, in any
-o format); 'svcbridge reconcile --failed' retries the failed ones.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge status
  svcbridge status -o yaml`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			v, err := collectStatus(cmd.Context(), client)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.format != "" {
				raw, err := json.Marshal(v)
				if err != nil {
					return err
				}
				err = printRaw(w, out.format, raw)
			} else {
				err = printStatus(w, v)
			}
			if err != nil {
				return err
			}
			return v.problems()
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "json", "yaml")
	return cmd
}

func collectStatus(ctx context.Context, c *Client) (statusView, error) {
	v := statusView{Services: []statusService{}, Agents: []statusAgent{}}
	svcs, err := c.ListServices(ctx)
	if err != nil {
		return v, err
	}
	inv, err := loadInventory(ctx, c, true)
	if err != nil {
		return v, err
	}
	// Best effort: /readyz answers 503 only while the store does not
	// answer, which the reads above would have met first.
	if r, err := c.Readyz(ctx); err == nil && r.Worker != "ok" {
		v.Worker = r.Worker
		v.noWorker = r.Pollers != nil && *r.Pollers == 0
	}
	for _, s := range svcs {
		v.Services = append(v.Services, statusService{Name: s.Name, Type: s.Type, Backend: backend(s),
			BridgePort: s.BridgePort, Endpoint: endpoint(s), AllowedFrom: allowedFrom(s), Status: status(s), Error: s.ErrorText(), Message: s.ProvisioningMessage})
	}
	v.Agents = make([]statusAgent, len(inv.agents))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unreachable error
	sem := make(chan struct{}, 8)
	for i, a := range inv.agents {
		v.Agents[i] = statusAgent{Name: a.Name, RouterMode: a.RouterMode, DefaultRouter: a.DefaultRouter, OpenPorts: []string{}, Router: a.Router}
		if a.RouterMode == "none" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rc, err := c.AgentRouter(ctx, a.UUID)
			var ue *UnreachableError
			switch {
			case NotFound(err):
			case errors.As(err, &ue):
				mu.Lock()
				unreachable = err
				mu.Unlock()
			case err != nil:
				v.Agents[i].RouterError = err.Error()
			default:
				v.Agents[i].OpenPorts = openPorts(rc)
			}
		}()
	}
	wg.Wait()
	return v, unreachable
}

// failedServices are the services whose status is failed.
func (v statusView) failedServices() []statusService {
	var out []statusService
	for _, s := range v.Services {
		if s.Status == "failed" {
			out = append(out, s)
		}
	}
	return out
}

// problems is status's exit, as a health check's: 6 when no worker polls
// the task queue (nothing gets provisioned), else 3 when a service is
// failed. The status printed says which and why.
func (v statusView) problems() error {
	if v.noWorker {
		return &reported{code: ExitNoWorker, msg: v.Worker}
	}
	var names []string
	for _, s := range v.failedServices() {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return nil
	}
	return &reported{code: ExitFailed, msg: "failed: " + strings.Join(names, ", ")}
}

func printStatus(w io.Writer, v statusView) error {
	if len(v.Services) == 0 {
		fmt.Fprintln(w, "No services.")
	} else {
		// ALLOWED-FROM only where there is a Kubernetes Service to tell.
		kube := slices.ContainsFunc(v.Services, func(s statusService) bool { return s.AllowedFrom != "" })
		header := []string{"SERVICE", "TYPE", "BACKEND", "BRIDGE-PORT", "ENDPOINT", "STATUS"}
		if kube {
			header = slices.Insert(header, 5, "ALLOWED-FROM")
		}
		t := newTable(w, header...)
		for _, s := range v.Services {
			row := []string{s.Name, s.Type, s.Backend, fmt.Sprint(s.BridgePort), s.Endpoint, s.Status}
			if kube {
				row = slices.Insert(row, 5, s.AllowedFrom)
			}
			t.row(row...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(v.Agents) == 0 {
		fmt.Fprintln(w, "No agents.")
	} else {
		t := newTable(w, "AGENT", "ROUTER-MODE", "OPEN-PORTS", "ROUTER")
		for _, a := range v.Agents {
			mode := a.RouterMode
			if a.DefaultRouter {
				mode += " (hub)"
			}
			ports := portRanges(a.OpenPorts)
			if a.RouterError != "" {
				ports = "? (" + a.RouterError + ")"
			}
			t.row(a.Name, mode, ports, routerColumn(a.Router))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if failed := v.failedServices(); len(failed) > 0 {
		fmt.Fprintln(w)
		for _, s := range failed {
			fmt.Fprintf(w, "service %s failed: %s\n", s.Name, s.Error)
		}
	}
	// What a status does not say ("ready" without an endpoint), below the
	// failures.
	if noted := slices.DeleteFunc(slices.Clone(v.Services), func(s statusService) bool { return s.Message == "" }); len(noted) > 0 {
		fmt.Fprintln(w)
		for _, s := range noted {
			fmt.Fprintf(w, "service %s: %s\n", s.Name, s.Message)
		}
	}
	if v.Worker != "" {
		fmt.Fprintf(w, "\nworkers: %s\n", v.Worker)
	}
	return nil
}

// routerColumn is status's word for what an agent's router side last
// reported: "-" with none, "in step", "behind: <why>", "refused N: <first>".
func routerColumn(r *wire.AgentRouter) string {
	switch {
	case r == nil:
		return "-"
	case r.Error != "":
		return "behind: " + r.Error
	case len(r.Failed) > 0:
		return fmt.Sprintf("refused %d: %s %s", len(r.Failed), r.Failed[0].Name, r.Failed[0].Reason)
	case r.Lagging:
		return "behind"
	default:
		return "in step"
	}
}
