package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

// BenchmarkUnchangedPoll answers one agent's unchanged polls of its change
// flags on every core, in process (no network), beside BenchmarkHealthz:
// the poll's cost over /healthz's is what the store, authentication and
// the failure limiter add.
func BenchmarkUnchangedPoll(b *testing.B) {
	st := storetest.Open(b, store.SQLite)
	h := New(testOptions(st, &recordingReconciler{}))
	api := serveTestAPI(b, testOptions(st, &recordingReconciler{}))
	fog := createAgent(b, api, map[string]any{"name": "fog-a", "routerMode": "edge"})
	benchHandler(b, h, "/api/v3/agent/config/changes", "Bearer "+fog.Token)
}

func BenchmarkHealthz(b *testing.B) {
	benchHandler(b, New(testOptions(storetest.Open(b, store.SQLite), &recordingReconciler{})), "/healthz", "")
}

func benchHandler(b *testing.B, h http.Handler, path, authorization string) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Authorization", authorization)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", path, w.Code, w.Body)
			}
		}
	})
}

// BenchmarkAuthLimiterTrusted is the limiter's part of every
// authenticated request: a trusted credential admitted and settled, on
// every core at once.
func BenchmarkAuthLimiterTrusted(b *testing.B) {
	l := newAuthLimiter(DefaultLimits)
	a := authAttempt{address: "192.0.2.1", account: [32]byte{1}, secret: [32]byte{1}}
	l.settle(&a, true, time.Now())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := a
			now := time.Now()
			l.admit(&a, now)
			l.settle(&a, true, now)
		}
	})
}
