// Package console holds the web console's files (assets/: plain ES
// modules and CSS, no build step, and cytoscape.js vendored by
// scripts/console-vendor.sh) and serves them from the binary, so the
// console works offline. It reads the API like any client, with the
// user's own token: it holds no logic of svcbridge's.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Policy is the console's Content-Security-Policy: its own scripts only
// (no inline script, no eval), its own API, never framed. Styles may be
// set inline because cytoscape positions its canvas so.
const Policy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// file is one asset and its validator.
type file struct {
	content []byte
	etag    string
}

// Handler serves the console's files at their paths below the console's
// root ("/" is index.html). Every answer carries Policy; a file is
// revalidated by its ETag (a hash of its content), so a new binary's
// console is never mixed with an old cached one.
func Handler() http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(content)
		files[strings.TrimPrefix(p, "assets")] = file{content: content, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: " + err.Error()) // the files are in the binary
	}
	files["/"] = files["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", Policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		f, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		name := path.Base(r.URL.Path)
		if r.URL.Path == "/" {
			name = "index.html"
		}
		// ServeContent answers If-None-Match with a 304 and sets the type
		// from the name.
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.content))
	})
}
