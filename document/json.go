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
	"unicode/utf16"
	"unicode/utf8"
)

// ReadJSONObject reads a body that must be exactly one JSON object, nested
// at most MaxDepth deep, with no key given twice at any depth (YAML refuses
// that too; keeping one of them would be a guess) and every string (keys
// included) passing the text rule, as written: encoding/json would
// silently turn bad bytes and escaped lone surrogates into U+FFFD. Values
// stay raw so that each field is type-checked with its own message. The
// work is linear in the body.
func ReadJSONObject(body []byte) (map[string]json.RawMessage, error) {
	if p := jsonNesting(body); p != "" {
		return nil, Errorf("Invalid JSON: %s", p)
	}
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
	if err := CheckJSON("", body); err != nil {
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

// jsonNesting applies the depth rule to a JSON text in one pass over its
// bytes, before anything is decoded. Brackets inside strings do not count;
// on invalid JSON the answer may be wrong, which the decoder then reports.
func jsonNesting(body []byte) string {
	depth, inString, escaped := 0, false, false
	for _, b := range body {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = b == '\\'
			inString = b != '"'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			if p := nestingProblem(depth); p != "" {
				return p
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return ""
}

// CheckJSON walks a valid JSON value (a field's, named field; "" for a
// whole body) for what decoding does not see: repeated keys, and strings
// (keys included) that fail the text rule as written.
func CheckJSON(field string, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var at *jsonPath
	if field != "" {
		at = &jsonPath{key: field}
	}
	return checkJSONValue(dec, raw, at)
}

// jsonPath is where a value is in a document ("spec.tags[2]"), made text
// only for an error: building the text of every value would make the walk
// of a deep document quadratic.
type jsonPath struct {
	parent *jsonPath
	key    string
	index  int
	item   bool // an array item, at index; else an object member, at key
}

func (p *jsonPath) String() string {
	switch {
	case p == nil:
		return ""
	case p.item:
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	}
	return joinPath(p.parent.String(), p.key)
}

// checkJSONValue walks one value of a valid JSON text.
func checkJSONValue(dec *json.Decoder, body []byte, at *jsonPath) error {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return Errorf("Invalid JSON: %s", err.Error())
	}
	switch t := tok.(type) {
	case string:
		return checkJSONString(at, body[start:dec.InputOffset()], t)
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
				member := &jsonPath{parent: at, key: key}
				if err := checkJSONString(member, body[start:dec.InputOffset()], key); err != nil {
					return err
				}
				if seen[key] {
					return Errorf("Invalid JSON: duplicated key '%s'", member)
				}
				seen[key] = true
				if err := checkJSONValue(dec, body, member); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := checkJSONValue(dec, body, &jsonPath{parent: at, index: i, item: true}); err != nil {
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

// checkJSONString applies the text rule to a string at as it was written:
// raw is its token (with the separators before it, all ASCII), s as
// decoded. Invalid UTF-8 and escaped lone surrogates are seen in raw (the
// decoder made them U+FFFD), everything else (an escaped NUL, a format
// character) in s.
func checkJSONString(at *jsonPath, raw []byte, s string) error {
	p := ""
	switch {
	case !utf8.Valid(raw):
		p = "is not valid UTF-8"
	case loneSurrogate(raw) != 0:
		p = fmt.Sprintf("contains an unpaired UTF-16 surrogate (\\u%04X)", loneSurrogate(raw))
	default:
		p = TextProblem(s)
	}
	if p != "" {
		return Errorf("Field '%s' %s", at, p)
	}
	return nil
}

// loneSurrogate returns the first \uD800-\uDFFF escape of a JSON string
// token that is not a high surrogate followed by a low one, or 0.
func loneSurrogate(raw []byte) rune {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped byte: a valid token has one
		if raw[i] != 'u' {
			continue
		}
		r := hexRune(raw[i+1 : i+5])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xDC00 && bytes.HasPrefix(raw[i+1:], []byte(`\u`)) {
			if low := hexRune(raw[i+3 : i+7]); low >= 0xDC00 && low <= 0xDFFF {
				i += 6
				continue
			}
		}
		return r
	}
	return 0
}

// hexRune reads the four hex digits of a \u escape.
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
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
