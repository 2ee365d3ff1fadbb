package document

import (
	"encoding/json"
	"testing"
)

// JSONObjects reads a list of objects of a body ReadJSONFields checked,
// item by item, naming a wrong item by its index.
func TestJSONObjects(t *testing.T) {
	known := NewFieldSet("name", "reason")
	for _, tc := range []struct{ body, want, got string }{
		{`{"l":[{"name":"a","reason":"r"} , { "name" : "b" }]}`, "", "a:r,b:,"},
		{`{"l":[]}`, "", ""},
		{`{}`, "", ""},
		{`{"l":{}}`, "Field 'l' is not of a type(s) array", ""},
		{`{"l":[{"name":"a"},3]}`, "Field 'l[1]' is not of a type(s) object", "a:,"},
		{`{"l":[{"name":"a","nmae":"b"}]}`, "Unknown field 'l[0].nmae'", ""},
		{`{"l":[{"name":"a\u00e9"},{"name":["x"]}]}`, "", "aé:,[\"x\"]:,"},
	} {
		obj, err := ReadJSONFields([]byte(tc.body), NewFieldSet("l"))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		got := ""
		err = JSONObjects(obj, "l", known, func(_ int, item map[string]json.RawMessage) error {
			for _, k := range []string{"name", "reason"} {
				if v, err := JSONText(item, k); err == nil && v != nil {
					got += *v
				} else if raw, ok := item[k]; ok {
					got += string(raw)
				}
				got += map[string]string{"name": ":", "reason": ","}[k]
			}
			return nil
		})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.want || got != tc.got {
			t.Errorf("%s: read %q, error %q; want %q, %q", tc.body, got, msg, tc.got, tc.want)
		}
	}
}
