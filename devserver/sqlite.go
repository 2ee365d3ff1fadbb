package devserver

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// prepareSQLite builds the SQLite persistence configs of the default store
// and of visibility, creating the schema of a new database file and the
// namespace (with its search attributes) if missing. Both run before the
// server starts, as the server cannot create its own schema.
//
// Visibility has a database of its own because the SQLite plugin gives each
// database one connection for the whole server: in one file, every
// visibility write (a fifth of the server's work) queued with the history
// writes a reconcile waits for.
func prepareSQLite(o Options) (store, visibility *config.SQL, err error) {
	if o.DataDir == "" {
		// A shared-cache memory database is global to the process by name,
		// so every server needs its own; the plugin sets its schema up.
		name := fmt.Sprintf("devserver-%d-%d", os.Getpid(), rand.Int64())
		memory := func(db string) *config.SQL {
			return &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
				ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"}}
		}
		store, visibility = memory(name), memory(name+"-visibility")
	} else {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("devserver: data dir: %w", err)
		}
		if store, err = fileDB(filepath.Join(o.DataDir, dbFileName)); err != nil {
			return nil, nil, err
		}
		if visibility, err = fileDB(filepath.Join(o.DataDir, visibilityFileName)); err != nil {
			return nil, nil, err
		}
		if err := dropUnusedVisibilityIndexes(visibility.DatabaseName); err != nil {
			return nil, nil, err
		}
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, searchAttrs())
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: namespace config: %w", err)
	}
	// CreateNamespaces skips a namespace that exists; a constraint error can
	// still surface if the lookup failed, and means the same thing.
	if err := sqliteschema.CreateNamespaces(store, ns); err != nil && !isAlreadyExists(err) {
		return nil, nil, fmt.Errorf("devserver: creating namespace %q: %w", o.Namespace, err)
	}
	return store, visibility, nil
}

// fileDB is the config of the SQLite file at path, whose schema it sets up
// when the file does not exist yet. The schema holds both stores' tables;
// each file uses its own.
func fileDB(path string) (*config.SQL, error) {
	_, err := os.Stat(path)
	fresh := errors.Is(err, fs.ErrNotExist)
	if err != nil && !fresh {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	cfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: path, ConnectAttributes: map[string]string{
		"mode": "rwc",
		// WAL with synchronous=NORMAL is several times faster than the
		// default rollback journal and still survives a process crash.
		// The plugin passes unknown attributes on as pragmas, unprefixed.
		"journal_mode": "wal",
		"synchronous":  "1",
	}}
	if fresh {
		if err := sqliteschema.SetupSchema(cfg); err != nil {
			return nil, fmt.Errorf("devserver: setting up schema in %s (delete the file to retry): %w", path, err)
		}
	}
	return cfg, nil
}

// unusedVisibilityIndexes are the indexes of Temporal's SQLite visibility
// schema on what neither svcbridge nor the Web UI filters by: the custom
// search attribute slots that are not Keyword (svcbridge's are), the CHASM
// slots, and schedule, batch, deployment, pause and size attributes. Every
// visibility write (two per create) updated all 58 indexes; with these 37
// gone a fill spends less on visibility. A query on one of them still
// works: it scans the dev server's rows.
var unusedVisibilityIndexes = []string{
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
	"by_batcher_user", "by_temporal_scheduled_start_time", "by_temporal_scheduled_by_id", "by_temporal_schedule_paused",
	"by_temporal_pause_info", "by_temporal_worker_deployment_version", "by_temporal_workflow_versioning_behavior",
	"by_temporal_worker_deployment",
	"by_bool_01", "by_bool_02", "by_bool_03", "by_datetime_01", "by_datetime_02", "by_datetime_03",
	"by_double_01", "by_double_02", "by_double_03", "by_int_01", "by_int_02", "by_int_03",
	"by_temporal_bool_01", "by_temporal_bool_02", "by_temporal_datetime_01", "by_temporal_datetime_02",
	"by_temporal_double_01", "by_temporal_double_02", "by_temporal_int_01", "by_temporal_int_02",
	"by_temporal_keyword_01", "by_temporal_keyword_02", "by_temporal_keyword_03", "by_temporal_keyword_04",
	"by_temporal_low_cardinality_keyword_01",
}

// dropUnusedVisibilityIndexes drops unusedVisibilityIndexes from the
// SQLite file at path, before the server opens it; done once, it finds
// nothing to do.
func dropUnusedVisibilityIndexes(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return fmt.Errorf("devserver: %w", err)
	}
	defer db.Close()
	for _, index := range unusedVisibilityIndexes {
		if _, err := db.Exec(`DROP INDEX IF EXISTS ` + index); err != nil {
			return fmt.Errorf("devserver: dropping the visibility index %s from %s: %w", index, path, err)
		}
	}
	return nil
}

func isAlreadyExists(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "already exists") || strings.Contains(msg, "UNIQUE constraint failed")
}
