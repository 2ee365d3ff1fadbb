package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// makeDataDir makes dev's data directory when it is missing. remove is
// for a start that fails: it removes what makeDataDir made (dir, and any
// parent it made with it), and nothing of a directory that existed, which
// is left as it was.
func makeDataDir(dir string) (remove func(), err error) {
	made := "" // the outermost directory that does not exist yet
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = p
		if filepath.Dir(p) == p {
			break
		}
	}
	remove = func() {
		if made != "" {
			os.RemoveAll(made)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		remove()
		return nil, fmt.Errorf("invalid setting DATA_DIR (--data-dir): %w", err)
	}
	return remove, nil
}

// lockDataDir makes dev the only user of its data directory: a second dev
// on it would start an embedded Temporal that takes over the first one's
// shards, and share its SQLite store. The lock is the kernel's (flock), so
// it goes with the process however that ends; the file names the holder.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "dev.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("invalid setting DATA_DIR (--data-dir): %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another svcbridge dev (pid %s): stop it, or start this one with another --data-dir",
				dir, pidOf(holder))
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// pidOf reads the lock file's pid, or says it could not.
func pidOf(holder []byte) string {
	if pid := strings.TrimSpace(string(holder)); pid != "" {
		return pid
	}
	return "unknown"
}
