package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// credentialsDir is --credentials-dir: the directory that receives the
// token of each agent the import creates, DIR/<agent>.token (mode 0600),
// the file svcbridge router-sync --token-file reads; "" prints the tokens
// instead. A token is shown once, when its agent is created: an agent the
// import does not create (svcbridge holds it) keeps its file untouched,
// and a file already there for an agent the import creates is replaced,
// since only the new token works for it.
type credentialsDir string

// path is agent name's file.
func (d credentialsDir) path(name string) string {
	return filepath.Join(string(d), name+".token")
}

// prepare makes the directory (mode 0700) unless it exists, and checks
// that a token can be written there: before anything is written to
// svcbridge, since a token that cannot be saved is shown once only. A dry
// run makes nothing: it checks only that the path is no file.
func (d credentialsDir) prepare(dryRun bool) error {
	if d == "" {
		return nil
	}
	fail := func(err error) error {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("refusing to import, nothing was written: --credentials-dir %s: %w", string(d), err)}
	}
	fi, err := os.Stat(string(d))
	switch {
	case err == nil && !fi.IsDir():
		return fail(errors.New("not a directory"))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fail(err)
	case dryRun:
		return nil
	case err != nil:
		if err := os.MkdirAll(string(d), 0o700); err != nil {
			return fail(err)
		}
	}
	if err := d.writable(); err != nil {
		return fail(err)
	}
	return nil
}

// writable checks that a file can be created in the directory.
func (d credentialsDir) writable() error {
	f, err := os.CreateTemp(string(d), ".token-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// planned is what a dry run's line says of agent name's token.
func (d credentialsDir) planned(name string) string {
	if d == "" {
		return ""
	}
	return "(agent token to be written to " + d.path(name) + ")"
}

// save writes the token of agent name, created now, and says where; with
// no directory, or when the file cannot be written, the line shows it.
func (d credentialsDir) save(name, token string) (string, error) {
	shown := "(agent token, shown once: " + token + ")"
	if d == "" {
		return shown, nil
	}
	path := d.path(name)
	replaced, err := writeSecret(path, token+"\n")
	if err != nil {
		err = fmt.Errorf("agent %s: writing its token to %s: %w", name, path, err)
		return strings.TrimSuffix(shown, ")") + "; " + err.Error() + ")", err
	}
	if replaced {
		return "(agent token written to " + path + ", replacing the file there)", nil
	}
	return "(agent token written to " + path + ")", nil
}

// writeSecret puts content in path, mode 0600, whole or not at all: it is
// written to a new file beside, which then replaces path. replaced reports
// that path held another content.
func writeSecret(path, content string) (replaced bool, err error) {
	old, err := os.ReadFile(path)
	existed := err == nil
	switch {
	case existed && string(old) == content:
		return false, os.Chmod(path, 0o600)
	case !existed && !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name()) // once renamed, there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return false, err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	return existed, os.Rename(f.Name(), path)
}
