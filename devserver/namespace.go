package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// searchAttrs are the Keyword attributes svcbridge's workflows set.
func searchAttrs() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		serviceNameAttr: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		statusAttr:      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// waitFrontendAndEnsureAttrs waits until the frontend answers, then makes
// sure the namespace has svcbridge's search attributes: a namespace created
// by an older DataDir may predate them, and CreateNamespaces never updates
// one.
func waitFrontendAndEnsureAttrs(ctx context.Context, frontend, namespace string, logger *slog.Logger) error {
	var c client.Client
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		cl, err := client.DialContext(attemptCtx, client.Options{
			HostPort:  frontend,
			Namespace: namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(minLevelHandler{slog.LevelWarn, logger.Handler()})),
		})
		if err == nil {
			_, err = cl.CheckHealth(attemptCtx, &client.CheckHealthRequest{})
			if err == nil {
				cancel()
				c = cl
				break
			}
			cl.Close()
		}
		cancel()
		lastErr = err
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("devserver: frontend %s not ready: %w (last error: %v)", frontend, err, lastErr)
		}
	}
	defer c.Close()

	ops := c.OperatorService()
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("devserver: listing search attributes: %w", err)
	}
	missing := searchAttrs()
	for name := range resp.GetCustomAttributes() {
		delete(missing, name)
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("devserver: adding search attributes: %w", err)
	}
	// Each service's namespace cache learns them at its next refresh: once
	// the frontend's lists them, one more interval covers the others', so
	// no workflow fails to set one.
	for {
		resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err != nil {
			return fmt.Errorf("devserver: listing search attributes: %w", err)
		}
		listed := 0
		for name := range missing {
			if _, ok := resp.GetCustomAttributes()[name]; ok {
				listed++
			}
		}
		if listed == len(missing) {
			break
		}
		if err := sleep(ctx, namespaceRefresh/4); err != nil {
			return fmt.Errorf("devserver: waiting for the search attributes added: %w", err)
		}
	}
	return sleep(ctx, namespaceRefresh)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
