package api

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// potctlNamespaceFile is the part of potctl's namespace file a remote
// control plane reads (potctl: config.Header's spec, resource.Namespace,
// RemoteControlPlane, RemoteController, IofogUser), by potctl's keys.
type potctlNamespaceFile struct {
	Spec struct {
		RemoteControlPlane *struct {
			Controllers []struct {
				Name     string `yaml:"name"`
				Endpoint string `yaml:"endpoint"`
			} `yaml:"controllers"`
			IofogUser struct {
				Email        string `yaml:"email"`
				AccessToken  string `yaml:"accessToken"`
				RefreshToken string `yaml:"refreshToken"`
			} `yaml:"iofogUser"`
		} `yaml:"remoteControlPlane"`
	} `yaml:"spec"`
}

// TestREADMEPotctlNamespace: the namespace file the README gives is one
// potctl reads as a remote control plane with a controller endpoint and the
// user's tokens, every key one potctl knows.
func TestREADMEPotctlNamespace(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "\n### Use with potctl and the ioFog Go SDK\n")
	if start < 0 {
		t.Fatal("README.md has no potctl section")
	}
	section = section[start:]
	block := regexp.MustCompile("(?s)\n( *)```yaml\n(.*?)\n *```\n").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("the potctl section has no YAML block")
	}
	doc := regexp.MustCompile("(?m)^"+block[1]).ReplaceAllString(block[2], "")
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var ns potctlNamespaceFile
	if err := dec.Decode(&ns); err != nil {
		t.Fatalf("potctl cannot read the README's namespace file: %v\n%s", err, doc)
	}
	cp := ns.Spec.RemoteControlPlane
	if cp == nil || len(cp.Controllers) != 1 || !strings.HasPrefix(cp.Controllers[0].Endpoint, "http") || cp.Controllers[0].Name == "" {
		t.Fatalf("potctl finds no controller endpoint in the README's namespace file:\n%s", doc)
	}
	if u := cp.IofogUser; u.Email == "" || u.AccessToken == "" || u.RefreshToken != u.AccessToken {
		t.Fatalf("the README's namespace file gives no token as potctl reads it: %+v", u)
	}
}
