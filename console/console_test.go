package console

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, p string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, p, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The console's page and files are served with their types and the
// policy that keeps anything but its own scripts out; an unchanged file
// is not sent again.
func TestHandler(t *testing.T) {
	h := Handler()
	for _, tc := range []struct{ path, typ string }{
		{"/", "text/html"}, {"/index.html", "text/html"}, {"/app.js", "text/javascript"},
		{"/vendor/cytoscape.min.js", "text/javascript"},
	} {
		w := get(t, h, tc.path)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.typ) {
			t.Fatalf("%s: %d %q, want 200 %s", tc.path, w.Code, w.Header().Get("Content-Type"), tc.typ)
		}
		if w.Header().Get("Content-Security-Policy") != Policy || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", tc.path, w.Header())
		}
		again := get(t, h, tc.path, "If-None-Match", w.Header().Get("ETag"))
		if again.Code != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d, want 304", tc.path, again.Code)
		}
	}
	if w := get(t, h, "/nothing.js"); w.Code != http.StatusNotFound {
		t.Errorf("an unknown file: %d, want 404", w.Code)
	}
}

// Every file the page and its modules load is in the binary, and nothing
// is loaded from elsewhere (the console works offline) or inline (the
// policy would block it).
func TestEveryReferenceResolves(t *testing.T) {
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"|(?:from|import)\s*\(?\s*['"]([^'"]+)['"]`)
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|\son[a-z]+=`)
	resolved := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "assets/vendor/") {
			return err
		}
		if !strings.HasSuffix(p, ".html") && !strings.HasSuffix(p, ".js") {
			return nil
		}
		content, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".html") && inline.Match(content) {
			t.Errorf("%s has an inline script or handler: %s", p, inline.Find(content))
		}
		for _, m := range refs.FindAllStringSubmatch(string(content), -1) {
			ref := m[1] + m[2]
			if strings.HasPrefix(ref, "#") || !strings.Contains(ref, ".") {
				continue
			}
			if strings.Contains(ref, "//") {
				t.Errorf("%s loads %s from elsewhere", p, ref)
				continue
			}
			target := path.Join(path.Dir(p), ref)
			if _, err := fs.Stat(assets, target); err != nil {
				t.Errorf("%s refers to %s, which is not among the files", p, ref)
			}
			resolved++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resolved < 5 {
		t.Errorf("only %d references found: the page, its styles, its modules and cytoscape at least", resolved)
	}
}

// The vendored cytoscape.js is the file scripts/console-vendor.sh fetched
// and checked: nobody edited it by hand.
func TestVendoredCytoscapeIsTheCheckedOne(t *testing.T) {
	script, err := os.ReadFile("../scripts/console-vendor.sh")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^SHA256=([0-9a-f]{64})$`).FindSubmatch(script)
	if want == nil {
		t.Fatal("scripts/console-vendor.sh records no SHA256")
	}
	content, err := assets.ReadFile("assets/vendor/cytoscape.min.js")
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(content); hex.EncodeToString(got[:]) != string(want[1]) {
		t.Errorf("assets/vendor/cytoscape.min.js has sha256 %x, the script checked %s: run scripts/console-vendor.sh", got, want[1])
	}
}
