package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies pending migrations. It is idempotent, and on PostgreSQL
// a session lock lets many processes start at once.
func (s *Store) Migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	dialect := goose.DialectSQLite3
	opts := []goose.ProviderOption{goose.WithSlog(slog.New(slog.DiscardHandler)),
		goose.WithGoMigrations(byteOrderIndexes(s.dialect))}
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, s.db.DB, fsys, opts...)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	return nil
}

// byteOrderIndexes is migration 14. Pages of names run in byte order
// (Tx.binary: COLLATE "C" on PostgreSQL), which an index in the
// database's collation (en_US.UTF-8, C.UTF-8) cannot serve: every page of
// the service list, every list's tags and every page of the drift check's
// routers read and sorted the whole table. These indexes in byte order
// make a page cost its own size. SQLite compares bytes by default, so its
// primary keys already serve: the migration only records its version
// there. (It is Go, not a file in migrations/, because the two dialects
// differ: the next file is 00015.)
func byteOrderIndexes(dialect string) *goose.Migration {
	if dialect != Postgres {
		return goose.NewGoMigration(14, nil, nil)
	}
	run := func(stmts ...string) *goose.GoFunc {
		return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			for _, q := range stmts {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		}}
	}
	return goose.NewGoMigration(14,
		run(`CREATE INDEX services_name_bytes ON services (name COLLATE "C")`,
			`CREATE INDEX service_tags_name_bytes ON service_tags (service_name COLLATE "C", position)`,
			`CREATE INDEX router_configs_agent_bytes ON router_configs (agent_uuid COLLATE "C")`),
		run(`DROP INDEX router_configs_agent_bytes`, `DROP INDEX service_tags_name_bytes`, `DROP INDEX services_name_bytes`))
}
