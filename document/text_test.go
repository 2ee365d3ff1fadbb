package document

import (
	"fmt"
	"strings"
	"testing"
)

func TestTextProblem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", ""},
		{"café ☕ 日本", ""},
		{"a b=c: d/e", ""},
		{"\uFFFD", ""},
		{"a\x00b", "contains a control character (U+0000)"},
		{"a\r\nb", "contains a control character (U+000D)"},
		{"\tx", "contains a control character (U+0009)"},
		{"\x1b[31m", "contains a control character (U+001B)"},
		{"\x7f", "contains a control character (U+007F)"},
		{"\u0085", "contains a control character (U+0085)"},
		{"a\xffb", "is not valid UTF-8"},
		{"\xed\xa0\x80", "is not valid UTF-8"},                                 // an encoded surrogate
		{"\xc0\x80", "is not valid UTF-8"},                                     // overlong NUL
		{"ab\u202Ecod.exe", "contains an invisible format character (U+202E)"}, // bidi override
		{"a\u2066b\u2069", "contains an invisible format character (U+2066)"},  // isolate
		{"a\u2069", "contains an invisible format character (U+2069)"},
		{"a\u200Bb", "contains an invisible format character (U+200B)"}, // zero-width space
		{"a\u200Cb", "contains an invisible format character (U+200C)"},
		{"a\u200Db", "contains an invisible format character (U+200D)"},
		{"a\u2060b", "contains an invisible format character (U+2060)"},     // word joiner
		{"\uFEFFa", "contains an invisible format character (U+FEFF)"},      // BOM
		{"a\U000E0041", "contains an invisible format character (U+E0041)"}, // tag LATIN CAPITAL A
		{"a\U000E0000", "contains an invisible format character (U+E0000)"}, // unassigned, in the tag block
		{"a\U000E007F", "contains an invisible format character (U+E007F)"},
		{"soft\u00ADhyphen", "contains an invisible format character (U+00AD)"},
		{"a\u200Eb", "contains an invisible format character (U+200E)"}, // left-to-right mark
		{"\U000E0080", ""},    // beyond the tag block: not Cf
		{"עברית العربية", ""}, // right-to-left letters are visible
		{"👍🏽", ""},            // emoji with a modifier (So, Sk)
	} {
		if got := TextProblem(tc.in); got != tc.want {
			t.Errorf("TextProblem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckTextList(t *testing.T) {
	for _, tc := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a", "b", "A"}, ""},
		{[]string{"a", "b", "a"}, `Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
		{[]string{"a", "\x00"}, "Field 'tags[1]' contains a control character (U+0000)"},
		{[]string{"a", "a\xff"}, "Field 'tags[1]' is not valid UTF-8"},
	} {
		t.Run(fmt.Sprintf("%q", tc.items), func(t *testing.T) {
			wantError(t, CheckTextList("tags", tc.items), tc.want)
		})
	}
}

// BenchmarkCheckTextList guards the tag-list checks every request runs:
// a quadratic scan of 100,000 tags took seconds (issue 13).
func BenchmarkCheckTextList(b *testing.B) {
	items := make([]string, 100_000)
	for i := range items {
		items[i] = fmt.Sprintf("tag-%d", i)
	}
	for b.Loop() {
		if err := CheckTextList("tags", items); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"Address already in use", 100, "Address already in use"},
		{"bad\ngrant\x1b[31m", 100, "bad grant [31m"},
		{"a\u202eb\u200bc", 100, "a b c"},
		{"x\xffy", 100, "x?y"},
		{strings.Repeat("é", 10), 9, "ééé…"},
		{strings.Repeat("é", 10), 8, "éé…"},
	} {
		got := Printable(tc.in, tc.limit)
		if got != tc.want || len(got) > tc.limit || TextProblem(got) != "" {
			t.Errorf("Printable(%q, %d) = %q, want %q within the limit", tc.in, tc.limit, got, tc.want)
		}
	}
}
