package cli

import (
	"fmt"
	"strings"
)

// objectRef is one object a verb names: its kind (services, agents or
// microservices) and name.
type objectRef struct {
	kind, name string
}

// String is the ref as -o name prints it: service/checkout.
func (r objectRef) String() string {
	return kindSingular[r.kind] + "/" + r.name
}

var kindSingular = map[string]string{"services": "service", "agents": "agent", "microservices": "microservice"}

// parseRefs reads the objects a verb names, in either form kubectl takes:
// a kind then names (`service a b`), or kind/name words (`service/a
// agent/b`, what -o name prints), so that `get -o name` output can be fed
// to any verb. After a kind, a name may repeat that kind as a prefix
// (`service service/a`, as xargs builds it); a microservice keeps its
// application/name, so only a prefix leaving a slash behind is one.
// kind is the leading kind, "" in the kind/name form.
func parseRefs(args []string) (kind string, refs []objectRef, err error) {
	if len(args) == 0 {
		return "", nil, nil
	}
	if kind, err := resourceKind(args[0]); err == nil {
		out := make([]objectRef, 0, len(args)-1)
		for _, a := range args[1:] {
			if k, name, ok := splitRef(a); ok && k == kind {
				a = name
			}
			out = append(out, objectRef{kind: kind, name: a})
		}
		return kind, out, nil
	}
	out := make([]objectRef, 0, len(args))
	for _, a := range args {
		k, name, ok := splitRef(a)
		if !ok {
			return "", nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("%q is neither a kind (services, agents, microservices) nor kind/name", a)}
		}
		out = append(out, objectRef{kind: k, name: name})
	}
	return "", out, nil
}

// splitRef splits kind/name; ok is false when the prefix is no kind, or
// a microservice's rest is not application/name.
func splitRef(s string) (kind, name string, ok bool) {
	prefix, rest, found := strings.Cut(s, "/")
	if !found || rest == "" {
		return "", "", false
	}
	kind, ok = resourceAliases[strings.ToLower(prefix)]
	if !ok || (kind == "microservices" && !strings.Contains(rest, "/")) {
		return "", "", false
	}
	return kind, rest, true
}

// oneKind is the kind all refs share, for the verbs that print one kind
// at a time.
func oneKind(refs []objectRef) (string, []string, error) {
	names := make([]string, len(refs))
	for i, r := range refs {
		if r.kind != refs[0].kind {
			return "", nil, &ExitError{Code: ExitOther, Err: fmt.Errorf("give objects of one kind: %s and %s", refs[0], r)}
		}
		names[i] = r.name
	}
	return refs[0].kind, names, nil
}
