// Package pgtest makes throwaway PostgreSQL databases for tests, on the
// server of SVCBRIDGE_TEST_POSTGRES (default: this machine's, trust auth).
// It imports nothing of svcbridge, so any package's tests may use it.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	_ "github.com/lib/pq"
)

// PostgresEnv names the server tests use; default DefaultPostgres.
const PostgresEnv = "SVCBRIDGE_TEST_POSTGRES"

// DefaultPostgres is the local server of these machines (trust auth).
const DefaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// adminDB is the one connection to the server's maintenance database that
// every test of a process shares to create and drop databases, so a test
// suite holds no more than one of PostgreSQL's connections besides its
// stores' (the server may have other clients: see the README).
var adminDB = sync.OnceValues(func() (*sql.DB, error) {
	db, err := sql.Open("postgres", adminURL())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, db.Ping()
})

func adminURL() string {
	if u := os.Getenv(PostgresEnv); u != "" {
		return u
	}
	return DefaultPostgres
}

// NewDB creates an empty database and returns its URL; it is
// dropped when the test ends.
func NewDB(t testing.TB) string {
	t.Helper()
	admin := adminURL()
	db, err := adminDB()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL at %s: %v (.ci/run starts it)", admin, err)
		}
		t.Skipf("PostgreSQL not reachable at %s (%v): start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, or set %s", admin, err, PostgresEnv)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "svcbridge_test_" + hex.EncodeToString(b)
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() { db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`) })
	return strings.Replace(admin, "/postgres?", "/"+name+"?", 1)
}
