package store

import "testing"

func TestPreparable(t *testing.T) {
	for _, tc := range []struct {
		query string
		args  int
		want  bool
	}{
		{"SELECT uuid FROM agents WHERE default_router", 0, true},
		{"\n\tselect m.mine FROM (SELECT 1 AS mine) m LEFT JOIN bridge_port_floor f ON f.id = 1", 0, true},
		{"SELECT name FROM services WHERE name = $1", 1, true},
		{"UPDATE services SET generation = generation + 1 WHERE name = ?", 1, true},
		{"CREATE TABLE services (name TEXT);", 0, false},
		{"CREATE INDEX services_test_port ON services (bridge_port)", 0, false},
		{"UPDATE services SET requested_at = updated_at", 0, false},
		{"DEALLOCATE ALL", 0, false},
		{"SELECT 1; SELECT 2", 0, false},
		{"SELECT", 0, false},
		{"", 0, false},
	} {
		if got := preparable(tc.query, tc.args); got != tc.want {
			t.Errorf("preparable(%q, %d) = %v, want %v", tc.query, tc.args, got, tc.want)
		}
	}
}
