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
		goose.WithGoMigrations(byteOrderIndexes(s.dialect), serviceRowVersions(s.dialect),
			serviceTableVersion(s.dialect))}
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
	return goose.NewGoMigration(14,
		migrationStep(`CREATE INDEX services_name_bytes ON services (name COLLATE "C")`,
			`CREATE INDEX service_tags_name_bytes ON service_tags (service_name COLLATE "C", position)`,
			`CREATE INDEX router_configs_agent_bytes ON router_configs (agent_uuid COLLATE "C")`),
		migrationStep(`DROP INDEX router_configs_agent_bytes`, `DROP INDEX service_tags_name_bytes`, `DROP INDEX services_name_bytes`))
}

// serviceRowVersions is migration 17: the version of a services row that
// the services cache reads (servicecache.go). PostgreSQL has one, xmin:
// nothing to do there. On SQLite, triggers give a row written (inserted or
// updated) the next value of a counter kept in a table of its own, so a
// version is never given twice, not even to a name deleted and made again.
// Rows already there read version 0 until written.
func serviceRowVersions(dialect string) *goose.Migration {
	if dialect == Postgres {
		return goose.NewGoMigration(17, nil, nil)
	}
	next := `UPDATE service_row_version SET n = n + 1;
		UPDATE services SET row_version = (SELECT n FROM service_row_version) WHERE name = NEW.name;`
	return goose.NewGoMigration(17,
		migrationStep(`ALTER TABLE services ADD COLUMN row_version INTEGER NOT NULL DEFAULT 0`,
			`CREATE TABLE service_row_version (n INTEGER NOT NULL)`,
			`INSERT INTO service_row_version (n) VALUES (0)`,
			`CREATE TRIGGER services_row_version_insert AFTER INSERT ON services BEGIN `+next+` END`,
			// The trigger's own update leaves the version changed: it
			// does not fire the trigger again.
			`CREATE TRIGGER services_row_version_update AFTER UPDATE ON services
				WHEN NEW.row_version = OLD.row_version BEGIN `+next+` END`),
		migrationStep(`DROP TRIGGER services_row_version_update`, `DROP TRIGGER services_row_version_insert`,
			`DROP TABLE service_row_version`, `ALTER TABLE services DROP COLUMN row_version`))
}

// serviceTableVersion is migration 18: on SQLite, a delete of a services
// row moves migration 17's counter too, so the counter is the version of
// the whole table (servicecache.go). Nothing to do on PostgreSQL.
func serviceTableVersion(dialect string) *goose.Migration {
	if dialect == Postgres {
		return goose.NewGoMigration(18, nil, nil)
	}
	return goose.NewGoMigration(18,
		migrationStep(`CREATE TRIGGER services_row_version_delete AFTER DELETE ON services
			BEGIN UPDATE service_row_version SET n = n + 1; END`),
		migrationStep(`DROP TRIGGER services_row_version_delete`))
}

// migrationStep is a Go migration's step: stmts in its transaction, in order.
func migrationStep(stmts ...string) *goose.GoFunc {
	return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}}
}
