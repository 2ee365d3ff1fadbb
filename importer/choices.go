package importer

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Kinds of the objects the import carries, as its lines and the
// --rename and --skip flags name them.
const (
	KindAgent        = "agent"
	KindMicroservice = "microservice"
	KindService      = "service"
)

// Ref names an object: its kind and its name (a microservice's is
// application/name).
type Ref struct{ Kind, Name string }

// String is how lines name the object: "agent Edge_5".
func (r Ref) String() string { return r.Kind + " " + r.Name }

// Flag is how --rename and --skip name it: "agent/Edge_5".
func (r Ref) Flag() string { return r.Kind + "/" + r.Name }

// Choices are the user's answers for objects the reference accepts and
// svcbridge refuses (a name with '_'): renames (--rename, --rename-file)
// and skips (--skip), each by the source's name.
type Choices struct {
	// Renames maps an object to its name in svcbridge.
	Renames map[Ref]string
	Skips   map[Ref]bool
}

// parseRef reads KIND/NAME.
func parseRef(s string) (Ref, error) {
	kind, name, _ := strings.Cut(strings.TrimSpace(s), "/")
	if !slices.Contains([]string{KindAgent, KindMicroservice, KindService}, kind) {
		return Ref{}, fmt.Errorf("%q: want KIND/NAME, KIND agent, microservice or service", s)
	}
	if kind == KindMicroservice && !validMicroserviceName(name) {
		return Ref{}, fmt.Errorf("%q: want microservice/APPLICATION/NAME", s)
	}
	if name == "" {
		return Ref{}, fmt.Errorf("%q: want %s/NAME", s, kind)
	}
	return Ref{Kind: kind, Name: name}, nil
}

func validMicroserviceName(s string) bool {
	app, name, ok := strings.Cut(s, "/")
	return ok && app != "" && name != "" && !strings.Contains(name, "/")
}

// AddRename reads KIND/OLD=NEW (a microservice's NEW is application/name,
// or a name in the same application).
func (c *Choices) AddRename(s string) error {
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return fmt.Errorf("%q: want KIND/OLD=NEW", s)
	}
	r, err := parseRef(s[:i])
	if err != nil {
		return err
	}
	to := strings.TrimSpace(s[i+1:])
	if r.Kind == KindMicroservice && !strings.Contains(to, "/") {
		app, _, _ := strings.Cut(r.Name, "/")
		to = app + "/" + to
	}
	if to == "" || (r.Kind == KindMicroservice && !validMicroserviceName(to)) || (r.Kind != KindMicroservice && strings.Contains(to, "/")) {
		return fmt.Errorf("%q: the new name is empty or not a %s name", s, r.Kind)
	}
	if c.Renames == nil {
		c.Renames = map[Ref]string{}
	}
	if old, ok := c.Renames[r]; ok && old != to {
		return fmt.Errorf("%s is renamed twice, to %s and to %s", r.Flag(), old, to)
	}
	c.Renames[r] = to
	return nil
}

// ReadRenames reads a --rename-file: one KIND/OLD=NEW a line; blank lines
// and # comments are passed over.
func (c *Choices) ReadRenames(r io.Reader, file string) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if err := c.AddRename(line); err != nil {
			return fmt.Errorf("%s:%d: %w", file, n, err)
		}
	}
	return sc.Err()
}

// AddSkip reads KIND/NAME.
func (c *Choices) AddSkip(s string) error {
	r, err := parseRef(s)
	if err != nil {
		return err
	}
	if c.Skips == nil {
		c.Skips = map[Ref]bool{}
	}
	c.Skips[r] = true
	return nil
}

// Check says what of c does not fit src: a rename or skip of an object
// the source does not have (a typo would import what was to be skipped),
// an object both renamed and skipped, two objects of a kind that would
// have one name.
func (c Choices) Check(src Source) error {
	names := sourceNames(src)
	var refs, errs []string
	for r := range c.Renames {
		refs = append(refs, r.Flag())
	}
	for r := range c.Skips {
		if _, renamed := c.Renames[r]; !renamed {
			refs = append(refs, r.Flag())
		}
	}
	slices.Sort(refs)
	for _, flag := range refs {
		r, _ := parseRef(flag)
		option := "--skip"
		if _, ok := c.Renames[r]; ok {
			option = "--rename"
		}
		switch {
		case !slices.Contains(names[r.Kind], r.Name):
			errs = append(errs, fmt.Sprintf("%s %s: the controller has no %s", option, flag, r))
		case option == "--rename" && c.Skips[r]:
			errs = append(errs, fmt.Sprintf("%s is both renamed and skipped", r.Flag()))
		}
	}
	for kind, list := range names {
		seen := map[string]string{}
		for _, name := range list {
			to := c.name(Ref{kind, name})
			if other, ok := seen[to]; ok {
				errs = append(errs, fmt.Sprintf("the controller's %ss %s and %s would both be %s %s in svcbridge", kind, min(other, name), max(other, name), kind, to))
			}
			seen[to] = name
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// name is r's name in svcbridge.
func (c Choices) name(r Ref) string {
	if to, ok := c.Renames[r]; ok {
		return to
	}
	return r.Name
}

// sourceNames are the names of src's objects, by kind.
func sourceNames(src Source) map[string][]string {
	out := map[string][]string{KindAgent: {}, KindMicroservice: {}, KindService: {}}
	for _, a := range src.Agents {
		out[KindAgent] = append(out[KindAgent], a.Name)
	}
	for _, m := range src.Microservices {
		out[KindMicroservice] = append(out[KindMicroservice], m.Application+"/"+m.Name)
	}
	for _, s := range src.Services {
		out[KindService] = append(out[KindService], s.Name)
	}
	return out
}

// rename returns src with c's renames applied to the objects' names, and
// the source's names of the renamed objects, by their new names.
// References are by uuid (resolveRefs), so they follow without change;
// tags are not names and stay as they are.
func (c Choices) rename(src Source) (Source, map[Ref]string) {
	from := map[Ref]string{}
	apply := func(kind, name string) string {
		to := c.name(Ref{kind, name})
		if to != name {
			from[Ref{kind, to}] = name
		}
		return to
	}
	out := Source{Agents: slices.Clone(src.Agents), Microservices: slices.Clone(src.Microservices), Services: slices.Clone(src.Services)}
	for i := range out.Agents {
		out.Agents[i].Name = apply(KindAgent, out.Agents[i].Name)
	}
	for i := range out.Microservices {
		m := &out.Microservices[i]
		m.Application, m.Name, _ = strings.Cut(apply(KindMicroservice, m.Application+"/"+m.Name), "/")
	}
	for i := range out.Services {
		out.Services[i].Name = apply(KindService, out.Services[i].Name)
	}
	return out, from
}
