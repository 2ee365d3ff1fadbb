package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

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
