package store

import "testing"

func TestOneRoundTrip(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://svcbridge:p%40ss@db:5432/svcbridge?sslmode=require": "postgres://svcbridge:p%40ss@db:5432/svcbridge?binary_parameters=yes&sslmode=require",
		"postgresql://db/svcbridge":                                     "postgresql://db/svcbridge?binary_parameters=yes",
		// The operator's own setting stays, whatever it is.
		"postgres://db/svcbridge?binary_parameters=no": "postgres://db/svcbridge?binary_parameters=no",
	} {
		if got := oneRoundTrip(in); got != want {
			t.Errorf("oneRoundTrip(%q) = %q, want %q", in, got, want)
		}
	}
}
