package worker

import (
	"slices"
	"testing"
)

func TestRecovered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, now map[string]bool
		want      []string
	}{
		{"first probe", nil, map[string]bool{"database": true, "kubernetes": true}, nil},
		{"first probe down", nil, map[string]bool{"database": false}, nil},
		{"still up", map[string]bool{"database": true}, map[string]bool{"database": true}, nil},
		{"goes down", map[string]bool{"database": true}, map[string]bool{"database": false}, nil},
		{"still down", map[string]bool{"kubernetes": false}, map[string]bool{"kubernetes": false}, nil},
		{"comes back", map[string]bool{"kubernetes": false, "database": true}, map[string]bool{"kubernetes": true, "database": true}, []string{"kubernetes"}},
		{"both back", map[string]bool{"kubernetes": false, "database": false}, map[string]bool{"kubernetes": true, "database": true}, []string{"database", "kubernetes"}},
		{"one back one down", map[string]bool{"kubernetes": false, "database": true}, map[string]bool{"kubernetes": true, "database": false}, []string{"kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Recovered(tc.prev, tc.now); !slices.Equal(got, tc.want) {
				t.Errorf("Recovered(%v, %v) = %v, want %v", tc.prev, tc.now, got, tc.want)
			}
		})
	}
}
