package api

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// TestWholeListsBesideADeletingService: whole lists read in parallel, some
// while a deleted service still has a listener on a router (listed as
// deleting, in its place by name) and some after, each read exactly the
// services there are, in order; a list with the deleting service never
// leaves it in a list read after it (on SQLite every whole list at one
// version shares what the store read).
func TestWholeListsBesideADeletingService(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		var all []string
		for i := range 6 {
			name := fmt.Sprintf("svc-%d", i)
			all = append(all, name)
			api.JSON(http.MethodPost, servicesPath, map[string]any{"name": name, "type": "external",
				"resource": "203.0.113.10", "targetPort": 443}).Want(http.StatusCreated)
		}
		type listed struct {
			Name               string `json:"name"`
			ProvisioningStatus string `json:"provisioningStatus"`
		}
		list := func() []listed {
			var out []listed
			api.Do(http.MethodGet, servicesPath, nil).Want(http.StatusOK).Decode(&out)
			return out
		}
		// svc-3 is there, deleting, or gone.
		check := func(deleting, gone bool) error {
			out := list()
			var names []string
			for _, s := range out {
				names = append(names, s.Name)
				if want := s.Name == "svc-3" && deleting; (s.ProvisioningStatus == "deleting") != want {
					return fmt.Errorf("%s listed %s, deleting %v", s.Name, s.ProvisioningStatus, want)
				}
			}
			want := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "svc-3" && gone })
			if !slices.Equal(names, want) {
				return fmt.Errorf("listed %v, want %v", names, want)
			}
			return nil
		}
		parallel := func(deleting, gone bool) {
			t.Helper()
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for range 4 {
				wg.Go(func() {
					for range 10 {
						if err := check(deleting, gone); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
		parallel(false, false)
		writeListeners(t, st, hub.UUID, []string{"svc-3"})
		api.Do(http.MethodDelete, servicesPath+"/svc-3", nil).Want(http.StatusNoContent)
		parallel(true, false)
		writeListeners(t, st, hub.UUID, nil)
		parallel(false, true)
	})
}
