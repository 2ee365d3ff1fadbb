package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func deleteCmd(o Options) *cobra.Command {
	var c conn
	var w waitFlags
	var dry dryRunFlag
	var files []string
	var ignoreNotFound bool
	cmd := &cobra.Command{
		Use:   "delete service|agent|microservice NAME... | delete KIND/NAME... | delete -f FILE",
		Short: "Delete services, agents or microservices",
		Long: `Delete the named services, agents or microservices (microservices by
application/name or uuid; also as kind/name, as 'get -o name' prints them), or
what YAML files declare (-f), in reverse file order
so that services go before the agents and microservices they use.

A service's row goes at once; its workflow then removes its listeners and
connector from every router. With --wait, delete waits until no router holds
them any more (exit 4 after --timeout).
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge delete service checkout --wait
  svcbridge delete -f checkout.yaml
  svcbridge delete agent fog-b --ignore-not-found`,
		ValidArgsFunction: completeResources(&c),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			if err := dry.apply(cmd.Context(), client, w.wait); err != nil {
				return err
			}
			var items []deleteItem
			switch {
			case len(files) > 0 && len(args) > 0:
				return errors.New("give either -f FILE or a kind and names, not both")
			case len(files) > 0:
				docs, err := readDocuments(files, cmd.InOrStdin())
				if err != nil {
					return err
				}
				for i := len(docs) - 1; i >= 0; i-- {
					d := docs[i]
					kind := map[string]string{"Service": "services", "Agent": "agents", "AgentConfig": "agents", "Microservice": "microservices"}[d.kind]
					name := d.name
					if d.kind == "Microservice" {
						if app, n, _, _, err := microserviceFields(d); err == nil {
							name = app + "/" + n
						}
					}
					items = append(items, deleteItem{kind: kind, name: name, doc: &d})
				}
			case len(args) > 0:
				_, refs, err := parseRefs(args)
				if err != nil {
					return err
				}
				for _, r := range refs {
					items = append(items, deleteItem{kind: r.kind, name: r.name})
				}
			}
			if len(items) == 0 {
				return errors.New("delete needs a kind and names (delete service checkout) or -f FILE")
			}
			return runDelete(cmd.Context(), cmd, client, items, w, ignoreNotFound)
		}),
	}
	c.flags(cmd)
	w.flags(cmd, "wait until the deleted services' objects are gone from every router", false)
	dry.flags(cmd)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "delete what these YAML files declare (file, directory or -)")
	cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Flags().BoolVar(&ignoreNotFound, "ignore-not-found", false, "treat an object that does not exist as deleted")
	return cmd
}

type deleteItem struct {
	kind, name string
	doc        *document
}

func (it deleteItem) ref() string {
	return objectRef{kind: it.kind, name: it.name}.String()
}

func runDelete(ctx context.Context, cmd *cobra.Command, c *Client, items []deleteItem, w waitFlags, ignoreNotFound bool) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var errs []error
	var targets []*waitTarget
	fail := func(it deleteItem, err error) {
		where := ""
		if it.doc != nil {
			where = " (" + it.doc.where() + ")"
		}
		fmt.Fprintf(errOut, "error: %s%s: %v\n", it.ref(), where, err)
		errs = append(errs, err)
	}
	for _, it := range items {
		if it.kind == "" {
			fail(it, fmt.Errorf("kind %q is not one of Service, Agent, AgentConfig, Microservice", it.doc.kind))
			continue
		}
		target, err := deleteOne(ctx, c, it, w.wait)
		var ue *UnreachableError
		if errors.As(err, &ue) {
			return err
		}
		if NotFound(err) && ignoreNotFound {
			fmt.Fprintln(out, it.ref()+" not found (ignored)")
			continue
		}
		if err != nil {
			fail(it, err)
			continue
		}
		fmt.Fprintln(out, it.ref()+" deleted"+dryRunNote(c))
		if target != nil {
			targets = append(targets, target)
		}
	}
	if w.wait {
		if err := w.waiter(cmd, c).wait(ctx, targets, w.timeout); err != nil {
			errs = append(errs, err)
			PrintErrors(errOut, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := join(errs)
	return &reported{code: ExitCode(err), msg: err.Error()}
}

// deleteOne deletes one object; for a service with wait it returns what
// to wait for.
func deleteOne(ctx context.Context, c *Client, it deleteItem, wait bool) (*waitTarget, error) {
	switch it.kind {
	case "agents":
		return nil, c.DeleteAgent(ctx, it.name)
	case "microservices":
		id, err := microserviceUUID(ctx, c, it.name)
		if err != nil {
			return nil, err
		}
		return nil, c.DeleteMicroservice(ctx, id)
	}
	if !wait {
		return nil, c.DeleteService(ctx, it.name)
	}
	// Which routers may hold its objects: read before the row goes.
	svc, err := c.GetService(ctx, it.name)
	if err != nil {
		return nil, err
	}
	routers, err := serviceRouters(ctx, c, svc)
	if err != nil {
		return nil, err
	}
	if err := c.DeleteService(ctx, it.name); err != nil {
		return nil, err
	}
	return &waitTarget{name: it.name, goal: untilGone, routers: routers}, nil
}

// microserviceUUID resolves a microservice reference, application/name or
// a uuid, to the uuid; a uuid is the server's to find.
func microserviceUUID(ctx context.Context, c *Client, ref string) (string, error) {
	app, name, ok := strings.Cut(ref, "/")
	if !ok {
		return ref, nil
	}
	m, found, err := c.MicroserviceNamed(ctx, app, name)
	if err == nil && !found {
		err = &APIError{Status: 404, Name: "NotFoundError", Message: "Microservice " + ref + " not found"}
	}
	return m.UUID, err
}

// serviceRouters are the agents whose routers may hold a service's
// objects: its distribution (listeners, hub) and the placement the server
// reports; every agent with a router for a service already being deleted,
// whose answer has no placement any more.
func serviceRouters(ctx context.Context, c *Client, s Service) ([]string, error) {
	var out []string
	add := func(uuid string) {
		if uuid != "" && !slices.Contains(out, uuid) {
			out = append(out, uuid)
		}
	}
	if s.Placement == nil {
		inv, err := loadInventory(ctx, c, false)
		if err != nil {
			return nil, err
		}
		for _, a := range inv.agents {
			if a.RouterMode != "none" {
				add(a.UUID)
			}
		}
		return out, nil
	}
	for _, e := range s.Distribution {
		add(e.Agent)
	}
	add(s.Placement.ConnectorAgent)
	add(s.Placement.HubAgent)
	return out, nil
}

func reconcileCmd(o Options) *cobra.Command {
	var c conn
	var w waitFlags
	var dry dryRunFlag
	var failed bool
	cmd := &cobra.Command{
		Use:   "reconcile SERVICE... | reconcile service/SERVICE... | reconcile --failed",
		Short: "Reconcile services now",
		Long: `Ask for a reconcile of each service now (POST /api/v3/services/{name}/reconcile),
for example to retry a failed one at once instead of after its backoff; --failed
asks it of every service whose status is failed. With --wait, reconcile waits for
that reconcile to finish: exit 0 when ready, 3 with the provisioningError when
failed, 4 after --timeout.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge reconcile checkout
  svcbridge reconcile checkout vendor --wait --timeout 60s
  svcbridge reconcile --failed --wait`,
		ValidArgsFunction: func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			return completeNames(cmd, &c, "services"), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := dry.apply(ctx, client, w.wait); err != nil {
				return err
			}
			names, err := serviceNames(args)
			switch {
			case err != nil:
				return err
			case failed && len(names) > 0:
				return &ExitError{Code: ExitOther, Err: errors.New("give either --failed or names, not both")}
			case failed:
				if names, err = failedServices(ctx, client); err != nil {
					return err
				}
				if len(names) == 0 {
					fmt.Fprintln(out, "No failed services.")
					return nil
				}
			case len(names) == 0:
				return &ExitError{Code: ExitOther, Err: errors.New("reconcile needs service names, or --failed")}
			}
			var errs []error
			var targets []*waitTarget
			for _, name := range names {
				request, err := client.ReconcileService(ctx, name)
				if err != nil {
					var ue *UnreachableError
					if errors.As(err, &ue) {
						return err
					}
					fmt.Fprintf(errOut, "error: service/%s: %v\n", name, err)
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(out, "service/%s reconcile requested%s\n", name, dryRunNote(client))
				if w.wait {
					targets = append(targets, &waitTarget{name: name, goal: untilReconciled, request: request})
				}
			}
			if w.wait {
				if err := w.waiter(cmd, client).wait(ctx, targets, w.timeout); err != nil {
					errs = append(errs, err)
					PrintErrors(errOut, err)
				}
			}
			if len(errs) == 0 {
				return nil
			}
			err = join(errs)
			return &reported{code: ExitCode(err), msg: err.Error()}
		}),
	}
	c.flags(cmd)
	w.flags(cmd, "wait for the reconcile to finish: ready, or failed (exit 3); =rollout: and until every agent the service selects has written its listener", true)
	cmd.Flags().BoolVar(&failed, "failed", false, "reconcile every service whose status is failed")
	dry.flags(cmd)
	return cmd
}

// failedServices are the names of the services whose status is failed.
func failedServices(ctx context.Context, c *Client) ([]string, error) {
	svcs, err := c.ListServices(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range svcs {
		if s.ProvisioningStatus == "failed" {
			names = append(names, s.Name)
		}
	}
	return names, nil
}

// serviceNames are the services a verb of services only names: bare
// names, or service/name as 'get -o name' prints them.
func serviceNames(args []string) ([]string, error) {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a
		if kind, name, ok := splitRef(a); ok {
			if kind != "services" {
				return nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("%s is not a service", a)}
			}
			names[i] = name
		}
	}
	return names, nil
}
