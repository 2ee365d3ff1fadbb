package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
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

// waitFrontend waits until the frontend answers. The namespace holds
// svcbridge's search attributes from its creation (prepareSQLite).
func waitFrontend(ctx context.Context, frontend, namespace string, logger *slog.Logger) error {
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
			cl.Close()
			if err == nil {
				cancel()
				return nil
			}
		}
		cancel()
		lastErr = err
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("devserver: frontend %s not ready: %w (last error: %v)", frontend, err, lastErr)
		}
	}
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
