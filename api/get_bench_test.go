package api

import (
	"net/http"
	"testing"

	"svcbridge/store/storetest"
)

// BenchmarkGetService answers GET /api/v3/services/{name}, what a client
// waiting for its service polls: the service, its agents' names, the
// agents its tags select, the hub and its listeners.
func BenchmarkGetService(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		api, _, _ := newTestAPI(b, dialect)
		api.JSON(http.MethodPost, "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true,
			"host": "hub.example.com", "tags": []string{"x"}}).Want(http.StatusCreated)
		api.JSON(http.MethodPost, "/api/v3/services", map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10",
			"targetPort": 443, "tags": []string{"x"}}).Want(http.StatusCreated)
		b.Run(dialect, func(b *testing.B) {
			for b.Loop() {
				api.Do(http.MethodGet, "/api/v3/services/web", nil).Want(http.StatusOK)
			}
		})
	}
}
