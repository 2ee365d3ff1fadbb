package document

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextProblem is the one rule for what a string that enters the API may
// contain; it returns "" when s is acceptable, else what is wrong with it.
// PostgreSQL's text type refuses invalid UTF-8 and NUL (SQLite would store
// them, so both stores must be protected here, alike), and no field of
// svcbridge can hold a control character: CR/LF, ESC or DEL in a name, tag
// or host would end up in logs, headers, router configs and annotations.
// Nor an invisible format character (category Cf: bidi overrides and
// isolates, zero-width characters, the BOM, tag characters): with them
// `get` and `describe` show one name and mean another. Every string is
// held to this, free text too (annotation values, credentials): svcbridge
// has no field where such characters mean something a client needs.
func TextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r): // C0 (NUL, CR, LF, tab, ...), DEL and C1
			return fmt.Sprintf("contains a control character (%U)", r)
		case isInvisible(r):
			return fmt.Sprintf("contains an invisible format character (%U)", r)
		}
	}
	return ""
}

// isInvisible reports a format character (Cf), or one of the tag block
// (U+E0000-E007F), whose unassigned U+E0000 is not Cf yet.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || (r >= 0xE0000 && r <= 0xE007F)
}

// Printable makes text from outside svcbridge (what an issuer or a router
// said) fit for a log line or a field: invalid UTF-8 as "?", every
// character that is not printable (TextProblem's control and invisible
// ones among them) as a space, and at most limit bytes, an ellipsis
// marking the cut.
func Printable(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > limit {
		const ellipsis = "…"
		s = strings.ToValidUTF8(s[:max(limit-len(ellipsis), 0)], "") + ellipsis
	}
	return s
}

// CheckText applies TextProblem to a body field, naming it.
func CheckText(field, s string) error {
	if p := TextProblem(s); p != "" {
		return Errorf("Field '%s' %s", field, p)
	}
	return nil
}

// CheckTextList applies CheckText to each item (named field[i]) and refuses
// an item given twice: a duplicated tag was stored and returned twice, and
// folding it silently would hide a client's mistake, as a duplicated JSON
// or YAML key would. Linear in the number of items.
func CheckTextList(field string, items []string) error {
	first := make(map[string]int, len(items))
	for i, s := range items {
		if err := CheckText(fmt.Sprintf("%s[%d]", field, i), s); err != nil {
			return err
		}
		if j, dup := first[s]; dup {
			return Errorf("Field '%s[%d]' repeats %s[%d] (%q): each entry may be given once", field, i, field, j, s)
		}
		first[s] = i
	}
	return nil
}
