// Package document reads the request documents of the API: one JSON object
// or one YAML document (kind, metadata, spec), checked for what no field may
// carry (duplicated keys, invalid UTF-8, control characters, unknown keys,
// alias bombs) before any field is read. Services, agents, microservices,
// sessions and the agents' pull API all read through it, so a hardening
// made here holds for every document.
//
// Each reader answers a client error (*Error) naming the field, in the
// ioFog controller's wording where it has one.
package document

import (
	"fmt"
	"strings"
)

// MaxDepth bounds the nesting of objects and arrays (mappings and
// sequences) in every request document, JSON or YAML; a Service needs 4.
// It is checked before a document is decoded, so a deep one costs no more
// than its bytes.
const MaxDepth = 32

// nestingProblem is the one depth rule of both readers: "" when depth
// (the outermost object or mapping is 1) is within MaxDepth.
func nestingProblem(depth int) string {
	if depth > MaxDepth {
		return fmt.Sprintf("nesting deeper than %d levels", MaxDepth)
	}
	return ""
}

// Error is invalid input (HTTP 400): a request document the readers
// refuse, or a value a rule of inventory or service refuses, so that all
// reach clients alike. Message is the text REST clients see.
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the formatted message.
func Errorf(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// Missing is the error of a required field that is absent.
func Missing(field string) *Error {
	return Errorf("Required field '%s' is missing", field)
}

// NotOfType is the error of a field whose value has the wrong JSON (or
// YAML) type; typ is what it should be ("string", "array", ...).
func NotOfType(field, typ string) *Error {
	return Errorf("Field '%s' is not of a type(s) %s", field, typ)
}

// FieldSet is the keys a document of one kind may carry. Unknown keys are
// refused, naming them, as Kubernetes' strict field validation does: a
// misspelt field silently dropped is a change the client believes made.
type FieldSet map[string]bool

// NewFieldSet returns the set of names.
func NewFieldSet(names ...string) FieldSet {
	f := make(FieldSet, len(names))
	for _, n := range names {
		f[n] = true
	}
	return f
}

// Check refuses the keys not in f, naming them all (in the order given)
// prefixed with path; where, when set, says where the first one is.
func (f FieldSet) Check(path string, keys []string, where string) error {
	var unknown []string
	for _, k := range keys {
		if !f[k] {
			unknown = append(unknown, "'"+joinPath(path, k)+"'")
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return Errorf("Unknown field %s%s", unknown[0], where)
	}
	return Errorf("Unknown fields %s%s", strings.Join(unknown, ", "), where)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
