package compose

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	doc := `
x-env: &env
  PASSWORD: ${POSTGRES_PASSWORD:-example}
  URL: postgres://u:${POSTGRES_PASSWORD:-example}@db:5432/d
services:
  app:
    image: app:1
    command: ["sh", "-c", "echo $$HOME ${UNSET}"]
    environment:
      <<: *env
      PORT: 8080
      EMPTY: ${NOT_SET-}
    deploy:
      replicas: 2
  tool:
    image: tool:1
    environment:
      - A=1
      - B=${X:-two}
    volumes:
      - ./here:/there:ro
`
	f, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	app, tool := f.Services["app"], f.Services["tool"]
	wantApp := Environment{"PASSWORD": "example", "URL": "postgres://u:example@db:5432/d", "PORT": "8080", "EMPTY": ""}
	if d := cmp.Diff(wantApp, app.Environment); d != "" {
		t.Errorf("app environment (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"sh", "-c", "echo $HOME "}, app.Command); d != "" {
		t.Errorf("app command (-want +got):\n%s", d)
	}
	if app.Replicas() != 2 || tool.Replicas() != 1 {
		t.Errorf("replicas %d and %d, want 2 and 1", app.Replicas(), tool.Replicas())
	}
	if d := cmp.Diff(Environment{"A": "1", "B": "two"}, tool.Environment); d != "" {
		t.Errorf("tool environment (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"./here:/there:ro"}, tool.Volumes); d != "" {
		t.Errorf("tool volumes (-want +got):\n%s", d)
	}

	for _, bad := range []string{
		"services:\n  a:\n    command: run it\n",          // string form
		"services:\n  a:\n    environment: 3\n",           // neither map nor list
		"services:\n  a:\n    image: ${X:?must be set}\n", // a required variable
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

func TestConnections(t *testing.T) {
	pg := func(cmd ...string) Service { return Service{Image: "postgres:16", Command: cmd} }
	svcbridge := func(conns string, replicas int) Service {
		s := Service{Image: "svcbridge:local", Environment: Environment{"DATABASE_URL": "postgres://db/x", "DB_MAX_OPEN_CONNS": conns}}
		s.Deploy.Replicas = &replicas
		return s
	}
	temporal := func(env Environment) Service {
		e := Environment{"DB": "postgres12", "SQL_MAX_CONNS": "10", "SQL_VIS_MAX_CONNS": "5"}
		for k, v := range env {
			e[k] = v
		}
		return Service{Image: "temporalio/server:1.31.0", Environment: e}
	}
	for _, tc := range []struct {
		name                   string
		services               map[string]Service
		needed, max, available int
		err                    string
	}{
		{name: "PostgreSQL's defaults", services: map[string]Service{"db": pg(), "api": svcbridge("10", 1)},
			needed: 10, max: 100, available: 97},
		{name: "limits from the command", services: map[string]Service{
			"db":  pg("postgres", "-c", "max_connections=150", "-c", "superuser_reserved_connections=5", "-c", "shared_buffers=1GB"),
			"api": svcbridge("10", 1), "worker": svcbridge("8", 2)},
			needed: 26, max: 150, available: 145},
		{name: "Temporal: four services, two pools each", services: map[string]Service{"db": pg(), "temporal": temporal(nil)},
			needed: 60, max: 100, available: 97},
		{name: "the schema tool", services: map[string]Service{"db": pg(), "schema": {Image: "temporalio/admin-tools:1.31.0", Environment: Environment{"SQL_PLUGIN": "postgres12"}}},
			needed: 1, max: 100, available: 97},
		{name: "services without a database", services: map[string]Service{"db": pg(), "ui": {Image: "temporalio/ui:2", Environment: Environment{"TEMPORAL_ADDRESS": "t:7233"}}},
			needed: 0, max: 100, available: 97},
		{name: "pool not written", services: map[string]Service{"db": pg(), "api": {Environment: Environment{"DATABASE_URL": "postgres://db/x"}}},
			err: "DB_MAX_OPEN_CONNS is not set"},
		{name: "pool zero", services: map[string]Service{"db": pg(), "api": svcbridge("0", 1)}, err: "want a count above 0"},
		{name: "Temporal pool not written", services: map[string]Service{"db": pg(), "temporal": {Image: "temporalio/server:1.31.0", Environment: Environment{"DB": "postgres12", "SQL_MAX_CONNS": "10"}}},
			err: "SQL_VIS_MAX_CONNS is not set"},
		{name: "Temporal on Cassandra", services: map[string]Service{"db": pg(), "temporal": temporal(Environment{"DB": "cassandra"})}, err: "DB="},
		{name: "Temporal services chosen", services: map[string]Service{"db": pg(), "temporal": temporal(Environment{"TEMPORAL_SERVICES": "history"})}, err: "TEMPORAL_SERVICES"},
		{name: "no PostgreSQL", services: map[string]Service{"api": svcbridge("10", 1)}, err: "0 postgres"},
		{name: "a limit that is no count", services: map[string]Service{"db": pg("-c", "max_connections=many")}, err: "not a count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := File{Services: tc.services}.Connections()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Needed() != tc.needed || b.MaxConnections != tc.max || b.Available() != tc.available {
				t.Errorf("needed %d of %d (max_connections %d), want %d of %d (%d); draws %+v",
					b.Needed(), b.Available(), b.MaxConnections, tc.needed, tc.available, tc.max, b.Draws)
			}
		})
	}
}
