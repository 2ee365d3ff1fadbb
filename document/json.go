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

// ReadJSONFields reads a body that must be exactly one JSON object, nested
// at most MaxDepth deep, with no key given twice at any depth (YAML refuses
// that too; keeping one of them would be a guess) and every string (keys
// included) passing the text rule, as written: encoding/json would
// silently turn bad bytes and escaped lone surrogates into U+FFFD. Values
// stay raw so that each field is type-checked with its own message. Keys
// outside known are refused, named (sorted, for a stable message), before
// any value is looked into: what a route does not read costs it one scan.
// The work is linear in the body, and nothing in it is decoded into values.
func ReadJSONFields(body []byte, known FieldSet) (map[string]json.RawMessage, error) {
	return readJSONObject(body, &known)
}

func readJSONObject(body []byte, known *FieldSet) (map[string]json.RawMessage, error) {
	if p := jsonNesting(body); p != "" {
		return nil, Errorf("Invalid JSON: %s", p)
	}
	if err := jsonSyntax(body); err != nil {
		return nil, err
	}
	w := jsonWalker{body: body}
	if w.space(); body[w.i] != '{' {
		return nil, NotOfType("instance", "object")
	}
	// The members, walked as CheckJSON walks them, except that the value
	// of a key outside known is stepped over unread: it is refused whole.
	obj := map[string]json.RawMessage{}
	var unknown []string
	err := w.members(nil, func(member *jsonPath) error {
		if known != nil && !(*known)[member.key] {
			unknown = append(unknown, member.key)
			w.skip()
			return nil
		}
		start := w.i
		if err := w.value(member); err != nil {
			return err
		}
		obj[member.key] = body[start:w.i]
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, known.Check("", unknown, "")
	}
	return obj, nil
}

// jsonSyntax refuses a body that is not exactly one JSON value. The check
// is encoding/json's scanner, which builds nothing; the decoder, which
// words the error, runs only on a body that fails it.
func jsonSyntax(body []byte) error {
	if json.Valid(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&skipValue{}); err != nil {
		if errors.Is(err, io.EOF) {
			return Errorf("Invalid JSON: empty body")
		}
		return Errorf("Invalid JSON: %s", err.Error())
	}
	return Errorf("Invalid JSON: unexpected data after the top-level value")
}

// skipValue is a JSON value checked for syntax and otherwise ignored.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

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
	var at *jsonPath
	if field != "" {
		at = &jsonPath{key: field}
	}
	w := jsonWalker{body: raw}
	return w.value(at)
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

// jsonWalker walks a JSON text already known to be valid, byte by byte,
// building nothing but the strings it checks: encoding/json's Token
// allocates for every value, which made a list of zeros cost a thousand
// times its size.
type jsonWalker struct {
	body []byte
	i    int
}

func (w *jsonWalker) space() {
	for w.i < len(w.body) && isJSONSpace(w.body[w.i]) {
		w.i++
	}
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// value walks the value at w.i (after spaces), leaving w.i just after it.
func (w *jsonWalker) value(at *jsonPath) error {
	w.space()
	switch w.body[w.i] {
	case '"':
		raw := w.str()
		return checkJSONString(at, raw, unquote(raw))
	case '{':
		return w.members(at, w.value)
	case '[':
		w.i++
		// One path for every item, renumbered: a path is text only in an
		// error, which ends the walk.
		item := &jsonPath{parent: at, item: true}
		for ; w.more(']'); item.index++ {
			if err := w.value(item); err != nil {
				return err
			}
		}
	default: // a number, true, false or null
		w.skip()
	}
	return nil
}

// members walks the object at w.i: each key is checked and given once,
// and each value is member's to walk, w.i at it.
func (w *jsonWalker) members(at *jsonPath, member func(*jsonPath) error) error {
	w.i++ // {
	seen := map[string]bool{}
	m := &jsonPath{parent: at} // one for every member, as for items
	for w.more('}') {
		raw := w.str()
		key := unquote(raw)
		m.key = key
		if err := checkJSONString(m, raw, key); err != nil {
			return err
		}
		if seen[key] {
			return Errorf("Invalid JSON: duplicated key '%s'", m)
		}
		seen[key] = true
		w.space()
		w.i++ // :
		w.space()
		if err := member(m); err != nil {
			return err
		}
	}
	return nil
}

// more steps over the comma before another member or item and reports
// true, or over the closing bracket and reports false.
func (w *jsonWalker) more(closing byte) bool {
	w.space()
	if w.body[w.i] == ',' {
		w.i++
		w.space()
	}
	if w.body[w.i] == closing {
		w.i++
		return false
	}
	return true
}

// str returns the string token at w.i, quotes included, stepping over it.
func (w *jsonWalker) str() []byte {
	start := w.i
	for w.i++; w.body[w.i] != '"'; w.i++ {
		if w.body[w.i] == '\\' {
			w.i++
		}
	}
	w.i++
	return w.body[start:w.i]
}

// skip steps over the value at w.i unread (brackets counted outside
// strings), leaving w.i just after it.
func (w *jsonWalker) skip() {
	depth := 0
	for w.i < len(w.body) {
		switch w.body[w.i] {
		case '"':
			w.str()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return // the enclosing value's: a scalar ended
			}
			if depth--; depth == 0 {
				w.i++
				return
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return
			}
		}
		w.i++
	}
}

// unquote decodes a valid string token as encoding/json does (invalid
// UTF-8 as U+FFFD).
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
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

// JSONObjects reads obj[key], a list of objects with only the keys of
// known, calling each with item i's members as raw values; absent is
// nothing. obj must be ReadJSONFields', which checked the list's syntax,
// nesting, keys and strings: the list is stepped through once, nothing
// decoded or checked again (a list of thousands of objects costs about
// its bytes), and the first wrong item ends the reading. The map given to
// each is reused for the next item.
func JSONObjects(obj map[string]json.RawMessage, key string, known FieldSet, each func(i int, item map[string]json.RawMessage) error) error {
	raw, ok := obj[key]
	if !ok {
		return nil
	}
	w := jsonWalker{body: raw}
	if raw[0] != '[' {
		return NotOfType(key, "array")
	}
	w.i++
	item := make(map[string]json.RawMessage, len(known))
	for i := 0; w.more(']'); i++ {
		if w.body[w.i] != '{' {
			return NotOfType(fmt.Sprintf("%s[%d]", key, i), "object")
		}
		w.i++
		clear(item)
		for w.more('}') {
			k := unquote(w.str())
			if !known[k] {
				return known.Check(fmt.Sprintf("%s[%d]", key, i), []string{k}, "")
			}
			w.space()
			w.i++ // :
			w.space()
			start := w.i
			w.skip()
			item[k] = raw[start:w.i]
		}
		if err := each(i, item); err != nil {
			return err
		}
	}
	return nil
}

// JSONText is obj[key] as a string: absent is nil, null or another type a
// type error. Unlike JSONField it does not apply the text rule again: obj
// must be ReadJSONFields' or JSONObjects', which did.
func JSONText(obj map[string]json.RawMessage, key string) (*string, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return nil, NotOfType(key, "string")
	}
	s := unquote(raw)
	return &s, nil
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
	// Kept as text, so a 400-digit port is a range error later instead of
	// a float conversion surprise here; anything but a number (which
	// json.Number would take from a string) is a type error, unread.
	var n json.Number
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &n) != nil {
		return nil, NotOfType(key, "integer")
	}
	i, ok := integerValue(n.String())
	if !ok {
		return nil, NotOfType(key, "integer")
	}
	return &i, nil
}

// JSONStringList returns obj[key] as a list of strings, each given once,
// naming a wrong item key[i] (as YAMLStringList does). Absent is nil. The
// list is read item by item: the first wrong one ends the reading.
func JSONStringList(obj map[string]json.RawMessage, key string) (*[]string, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, _ := dec.Token(); t != json.Delim('[') {
		return nil, NotOfType(key, "array")
	}
	out := []string{}
	for i := 0; dec.More(); i++ {
		t, _ := dec.Token()
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
