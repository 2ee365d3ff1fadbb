package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// BenchmarkListServices10000 answers GET /api/v3/services, whole and a
// page of 500, with 10,000 services stored (targets on dev, issue 18:
// ≤ 150 ms and ≤ 20 ms).
func BenchmarkListServices10000(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		api, st, _ := newTestAPI(b, dialect)
		err := st.InTx(context.Background(), func(tx *store.Tx) error {
			for i := range 10000 {
				err := tx.InsertService(context.Background(), &service.Service{
					Spec: service.Spec{Name: fmt.Sprintf("svc-%05d", i), Type: service.TypeExternal, Resource: "203.0.113.10",
						TargetPort: 443, DefaultBridge: service.DefaultBridge, Tags: []string{"edge"}},
					BridgePort: 10024 + i,
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range []string{"/api/v3/services", "/api/v3/services?limit=500&continue=" + continueToken([]string{"svc-04999"})} {
			b.Run(dialect+" "+path[len("/api/v3/services"):], func(b *testing.B) {
				for b.Loop() {
					api.Do(http.MethodGet, path, nil).Want(http.StatusOK)
				}
			})
		}
	}
}
