// Package compose reads docker-compose.yml as Docker Compose does, as far
// as svcbridge's tests need it: each service's image, command, environment
// (interpolated as with an empty environment, so ${VAR:-default} is its
// default and $$ a $), volumes and replicas; and it adds up the PostgreSQL
// connections the file's processes may hold at once (Connections).
//
// deploy's tests check the file with it, and systemtest's production
// rehearsal runs the file's processes from the values it reads, so the two
// read the file one way.
package compose

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/template"
	"gopkg.in/yaml.v3"
)

// File is a Compose file.
type File struct {
	Services map[string]Service `yaml:"services"`
}

// Service is one service of a Compose file. Command and Entrypoint are in
// list form (the string form, which Compose splits like a shell, is an
// error here rather than a guess).
type Service struct {
	Image       string      `yaml:"image"`
	Command     []string    `yaml:"command"`
	Entrypoint  []string    `yaml:"entrypoint"`
	Environment Environment `yaml:"environment"`
	Volumes     []string    `yaml:"volumes"`
	Deploy      struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// Replicas is how many containers Compose starts for the service.
func (s Service) Replicas() int {
	if s.Deploy.Replicas == nil {
		return 1
	}
	return *s.Deploy.Replicas
}

// Environment is a service's environment, from the map or the list form.
type Environment map[string]string

// UnmarshalYAML reads `KEY: value` (with merge keys) and `- KEY=value`.
func (e *Environment) UnmarshalYAML(n *yaml.Node) error {
	out := Environment{}
	switch n.Kind {
	case yaml.MappingNode:
		var m map[string]string
		if err := n.Decode(&m); err != nil {
			return err
		}
		for k, v := range m {
			out[k] = v
		}
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, item := range l {
			k, v, _ := strings.Cut(item, "=")
			out[k] = v
		}
	default:
		return fmt.Errorf("line %d: environment is neither a map nor a list", n.Line)
	}
	*e = out
	return nil
}

// Load reads and interpolates a Compose file.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	return Parse(b)
}

// Parse interpolates every value of a Compose document, as Compose does
// before it reads the model, and decodes it.
func Parse(doc []byte) (File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return File{}, err
	}
	if err := interpolate(&root); err != nil {
		return File{}, err
	}
	var f File
	if err := root.Decode(&f); err != nil {
		return File{}, err
	}
	return f, nil
}

// interpolate substitutes the values of a node tree in place. Aliases are
// not followed: their anchor is substituted where it stands, and twice
// would turn an escaped $$ into a variable.
func interpolate(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := Interpolate(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		n.Value = v
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 { // values; keys stay
			if err := interpolate(n.Content[i]); err != nil {
				return err
			}
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := interpolate(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// Interpolate resolves a value as Compose does when no variable is set:
// ${VAR:-default} and ${VAR-default} give the default, ${VAR} is empty,
// $$ is a literal $ (compose-go's own interpolation).
func Interpolate(s string) (string, error) {
	unset := func(string) (string, bool) { return "", false }
	return template.SubstituteWithOptions(s, unset, template.WithoutLogging)
}

// Draw is what one service holds of PostgreSQL's connections at most:
// PerProcess for each of its Processes.
type Draw struct {
	Service               string
	Processes, PerProcess int
	Why                   string // which settings give PerProcess
}

// Budget is PostgreSQL's connection limit against what the file's
// processes may hold.
type Budget struct {
	Draws []Draw
	// MaxConnections and Reserved are PostgreSQL's max_connections and
	// superuser_reserved_connections: Available are left for the roles
	// the processes connect as.
	MaxConnections, Reserved int
}

// Needed is the sum of every service's draw.
func (b Budget) Needed() int {
	n := 0
	for _, d := range b.Draws {
		n += d.Processes * d.PerProcess
	}
	return n
}

// Available is what PostgreSQL accepts from roles that are not superusers.
func (b Budget) Available() int { return b.MaxConnections - b.Reserved }

// PostgreSQL's defaults, when the file does not set them (`-c name=value`
// in the postgres service's command).
const (
	defaultMaxConnections = 100
	defaultReserved       = 3
)

// temporalServices is how many services `temporal-server start` runs in one
// process by default: frontend, history, matching and worker. Each opens
// its own pools, one per store (default and visibility).
const temporalServices = 4

// Connections adds up the connections each service of the file may open:
//   - PostgreSQL (an image postgres:*) sets the limit;
//   - a svcbridge process (DATABASE_URL) opens up to DB_MAX_OPEN_CONNS;
//   - a Temporal server (temporalio/server:*, on SQL) opens up to
//     SQL_MAX_CONNS for the default store and SQL_VIS_MAX_CONNS for
//     visibility in each of its services;
//   - temporal-sql-tool (SQL_PLUGIN) runs its statements one after another
//     on one connection.
//
// One-shot services count as if they ran beside the others: a second `up`
// runs them again while the rest is running. The pool settings must be
// written in the file, so the budget is what the file says.
func (f File) Connections() (Budget, error) {
	b := Budget{MaxConnections: defaultMaxConnections, Reserved: defaultReserved}
	postgres := 0
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		s := f.Services[name]
		env := s.Environment
		switch {
		case strings.HasPrefix(s.Image, "postgres:"):
			postgres++
			if err := postgresLimits(s.Command, &b); err != nil {
				return Budget{}, fmt.Errorf("%s: %w", name, err)
			}
		case env["DATABASE_URL"] != "":
			n, err := positive(env, "DB_MAX_OPEN_CONNS")
			if err != nil {
				return Budget{}, fmt.Errorf("%s: %w", name, err)
			}
			b.Draws = append(b.Draws, Draw{name, s.Replicas(), n, "DB_MAX_OPEN_CONNS"})
		case strings.HasPrefix(s.Image, "temporalio/server:"):
			if db := strings.ToLower(env["DB"]); db != "postgres12" && db != "postgres12_pgx" {
				return Budget{}, fmt.Errorf("%s: DB=%q, want postgres12 or postgres12_pgx", name, env["DB"])
			}
			if env["TEMPORAL_SERVICES"] != "" || env["USE_INTERNAL_FRONTEND"] != "" {
				return Budget{}, fmt.Errorf("%s: TEMPORAL_SERVICES and USE_INTERNAL_FRONTEND change the services one process runs; count them here first", name)
			}
			main, err := positive(env, "SQL_MAX_CONNS")
			if err != nil {
				return Budget{}, fmt.Errorf("%s: %w", name, err)
			}
			vis, err := positive(env, "SQL_VIS_MAX_CONNS")
			if err != nil {
				return Budget{}, fmt.Errorf("%s: %w", name, err)
			}
			b.Draws = append(b.Draws, Draw{name, s.Replicas(), temporalServices * (main + vis),
				fmt.Sprintf("%d services x (SQL_MAX_CONNS %d + SQL_VIS_MAX_CONNS %d)", temporalServices, main, vis)})
		case env["SQL_PLUGIN"] != "":
			b.Draws = append(b.Draws, Draw{name, s.Replicas(), 1, "temporal-sql-tool: one statement at a time"})
		}
	}
	if postgres != 1 {
		return Budget{}, fmt.Errorf("%d postgres:* services, want 1", postgres)
	}
	return b, nil
}

// postgresLimits reads `-c max_connections=N` and
// `-c superuser_reserved_connections=N` from a postgres command.
func postgresLimits(cmd []string, b *Budget) error {
	for i, arg := range cmd {
		if arg != "-c" || i+1 == len(cmd) {
			continue
		}
		name, value, _ := strings.Cut(cmd[i+1], "=")
		n, err := strconv.Atoi(value)
		switch name {
		case "max_connections":
			b.MaxConnections = n
		case "superuser_reserved_connections":
			b.Reserved = n
		default:
			continue
		}
		if err != nil || n < 0 {
			return fmt.Errorf("-c %s: not a count", cmd[i+1])
		}
	}
	return nil
}

// positive reads a setting that must be written, as a count above 0.
func positive(env Environment, key string) (int, error) {
	v, ok := env[key]
	if !ok {
		return 0, fmt.Errorf("%s is not set: write it, so the connection budget is the file's", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q, want a count above 0", key, v)
	}
	return n, nil
}
