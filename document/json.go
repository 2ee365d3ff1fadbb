package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// ReadJSONObject reads a body that must be exactly one JSON object, with
// no key given twice at any depth (YAML refuses that too; keeping one of
// them would be a guess) and only valid UTF-8 in its strings (encoding/json
// would silently turn bad bytes into U+FFFD). Values stay raw so that each
// field is type-checked with its own message.
func ReadJSONObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errorf("Invalid JSON: empty body")
		}
		return nil, Errorf("Invalid JSON: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Errorf("Invalid JSON: unexpected data after the top-level value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, NotOfType("instance", "object")
	}
	// The body is known to be valid JSON: walk its tokens for what Decode
	// does not see.
	walk := json.NewDecoder(bytes.NewReader(body))
	walk.UseNumber()
	if err := checkJSONValue(walk, body, ""); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, Errorf("Invalid JSON: %s", err.Error())
	}
	return obj, nil
}

// ReadJSONFields is ReadJSONObject refusing the keys outside known, naming
// them (sorted, for a stable message).
func ReadJSONFields(body []byte, known FieldSet) (map[string]json.RawMessage, error) {
	obj, err := ReadJSONObject(body)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return obj, known.Check("", keys, "")
}

// checkJSONValue walks one value of a valid JSON text, refusing repeated
// keys and strings (keys included) whose raw bytes are not UTF-8.
func checkJSONValue(dec *json.Decoder, body []byte, path string) error {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return Errorf("Invalid JSON: %s", err.Error())
	}
	switch t := tok.(type) {
	case string:
		// The raw token (with quotes, escapes and separators, all ASCII)
		// is valid UTF-8 exactly when the string's bytes are.
		return CheckText(path, invalidOnly(body[start:dec.InputOffset()]))
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				start := dec.InputOffset()
				k, err := dec.Token()
				if err != nil {
					return Errorf("Invalid JSON: %s", err.Error())
				}
				key, _ := k.(string)
				if err := CheckText(joinPath(path, key), invalidOnly(body[start:dec.InputOffset()])); err != nil {
					return err
				}
				if seen[key] {
					return Errorf("Invalid JSON: duplicated key '%s'", joinPath(path, key))
				}
				seen[key] = true
				if err := checkJSONValue(dec, body, joinPath(path, key)); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := checkJSONValue(dec, body, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		if err != nil {
			return Errorf("Invalid JSON: %s", err.Error())
		}
	}
	return nil
}

// invalidOnly returns raw as a string when it is not valid UTF-8 (so that
// the text rule names that problem), else "": raw JSON separators between
// tokens are not the field's content and must not meet the control
// character rule.
func invalidOnly(raw []byte) string {
	if TextProblem(string(raw)) == "is not valid UTF-8" {
		return string(raw)
	}
	return ""
}

// JSONField decodes obj[key] as a T: absent is nil, and null or another
// JSON type is a type error naming typ (null does not mean "unset": the
// reference schema treats it so). Strings, and the items of string lists,
// must pass the text rule.
func JSONField[T any](obj map[string]json.RawMessage, key, typ string) (*T, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	var v T
	if IsJSONNull(raw) || json.Unmarshal(raw, &v) != nil {
		return nil, NotOfType(key, typ)
	}
	var err error
	switch text := any(v).(type) {
	case string:
		err = CheckText(key, text)
	case []string:
		err = CheckTextList(key, text)
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// IsJSONNull reports whether a raw value is null.
func IsJSONNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// JSONInt returns obj[key] as an integer the way JSON Schema types it:
// any number with an integral value (8080, 8080.0, 8.08e3). Absent is nil.
func JSONInt(obj map[string]json.RawMessage, key string) (*int, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	var v any
	_ = jsonValue(raw, &v) // ReadJSONObject checked the syntax
	n, ok := v.(json.Number)
	if !ok {
		return nil, NotOfType(key, "integer")
	}
	i, ok := integerValue(n.String())
	if !ok {
		return nil, NotOfType(key, "integer")
	}
	return &i, nil
}

// JSONStringList returns obj[key] as a list of strings, each given once,
// naming a wrong item key[i] (as YAMLStringList does). Absent is nil.
func JSONStringList(obj map[string]json.RawMessage, key string) (*[]string, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	var v any
	_ = jsonValue(raw, &v) // ReadJSONObject checked the syntax
	list, isList := v.([]any)
	if !isList {
		return nil, NotOfType(key, "array")
	}
	out := make([]string, 0, len(list))
	for i, t := range list {
		s, isString := t.(string)
		if !isString {
			return nil, NotOfType(fmt.Sprintf("%s[%d]", key, i), "string")
		}
		out = append(out, s)
	}
	if err := CheckTextList(key, out); err != nil {
		return nil, err
	}
	return &out, nil
}

// jsonValue decodes a raw value keeping numbers as text, so a 400-digit
// port is a range error later instead of a float conversion surprise here.
func jsonValue(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// integerValue parses a JSON number the way JSON Schema types it: any
// number with an integral value (8080, 8080.0, 8.08e3) is an integer.
// Integers beyond int are clamped; a range check rejects them with a
// clearer message than a type error would give.
func integerValue(s string) (int, bool) {
	if i, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
		return int(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Overflows to ±Inf: not an integer in JavaScript either
		// (Number.isInteger(Infinity) is false). Underflow gives 0, no error.
		return 0, false
	}
	return clampInt(f)
}

// clampInt64 narrows i to int (a no-op on 64-bit platforms).
func clampInt64(i int64) int {
	switch {
	case i > math.MaxInt:
		return math.MaxInt
	case i < math.MinInt:
		return math.MinInt
	}
	return int(i)
}

// clampInt converts an integral float to int, clamping out-of-range values;
// ok is false for fractions, NaN and infinities.
func clampInt(f float64) (int, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false
	}
	switch {
	case f >= float64(math.MaxInt):
		return math.MaxInt, true
	case f <= float64(math.MinInt):
		return math.MinInt, true
	}
	return int(f), true
}
