package api

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// potctlNamespaceFile is the part of potctl's namespace file a remote
// control plane reads (potctl: config.Header, resource.Namespace,
// RemoteControlPlane, RemoteController, IofogUser), by potctl's keys.
type potctlNamespaceFile struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Name is the namespace: potctl writes the file back to
		// namespaces/<name>.yaml.
		Name               string `yaml:"name"`
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

// TestDocsPotctlNamespace: the namespace file docs/potctl.md gives is one
// potctl reads as a remote control plane with a controller endpoint and the
// user's tokens, every key one potctl knows, and names its namespace
// (without spec.name potctl writes it back to namespaces/.yaml, and
// `potctl get namespaces` panics).
func TestDocsPotctlNamespace(t *testing.T) {
	b, err := os.ReadFile("../docs/potctl.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	block := regexp.MustCompile("(?s)\n( *)```yaml\n(.*?)\n *```\n").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("the potctl section has no YAML block")
	}
	doc := regexp.MustCompile("(?m)^"+block[1]).ReplaceAllString(block[2], "")
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var ns potctlNamespaceFile
	if err := dec.Decode(&ns); err != nil {
		t.Fatalf("potctl cannot read the namespace file of docs/potctl.md: %v\n%s", err, doc)
	}
	if ns.Spec.Name == "" || ns.Metadata.Name != ns.Spec.Name || ns.Kind != "Namespace" {
		t.Fatalf("the namespace file of docs/potctl.md names no namespace as potctl writes one (spec.name %q, metadata.name %q, kind %q)",
			ns.Spec.Name, ns.Metadata.Name, ns.Kind)
	}
	if !strings.Contains(section, "namespaces/"+ns.Spec.Name+".yaml") {
		t.Fatalf("docs/potctl.md does not say to write the namespace %s to namespaces/%s.yaml", ns.Spec.Name, ns.Spec.Name)
	}
	cp := ns.Spec.RemoteControlPlane
	if cp == nil || len(cp.Controllers) != 1 || !strings.HasPrefix(cp.Controllers[0].Endpoint, "http") || cp.Controllers[0].Name == "" {
		t.Fatalf("potctl finds no controller endpoint in the namespace file of docs/potctl.md:\n%s", doc)
	}
	if u := cp.IofogUser; u.Email == "" || u.AccessToken == "" || u.RefreshToken != u.AccessToken {
		t.Fatalf("the namespace file of docs/potctl.md gives no token as potctl reads it: %+v", u)
	}
}
