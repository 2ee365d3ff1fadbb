package cli

import (
	"encoding/json"
	"testing"
)

// TestListPage: a list page is read in both shapes servers answer, a bare
// array or the reference's object holding one ({"microservices": [...]}),
// and anything else is refused.
func TestListPage(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int // items; -1: refused
	}{
		{`[{"name":"a"},{"name":"b"}]`, 2},
		{`[]`, 0},
		{`{"microservices":[{"name":"a"}]}`, 1},
		{`{"microservices":[]}`, 0},
		{`{"microservices":{"name":"a"}}`, -1},
		{`{"a":[],"b":[]}`, -1},
		{`{"name":"a"}`, -1},
		{`null`, 0},
		{`"x"`, -1},
	} {
		page, err := listPage([]byte(tc.body))
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("%s: read as %d items, want refused", tc.body, len(page))
		case tc.want >= 0 && (err != nil || len(page) != tc.want):
			t.Errorf("%s: %d items, %v; want %d", tc.body, len(page), err, tc.want)
		}
		for _, it := range page {
			if !json.Valid(it) {
				t.Errorf("%s: item %s", tc.body, it)
			}
		}
	}
}

// TestMicroserviceDocumentLeavesOutTheReferenceFields: a microservice's
// document holds what svcbridge holds; the reference controller's fields
// of the answer (for ioFog clients) are not printed.
func TestMicroserviceDocumentLeavesOutTheReferenceFields(t *testing.T) {
	raw := []byte(`{"uuid":"u","application":"shop","name":"web","agent":"a","hostNetworkMode":false,` +
		`"createdAt":"2026-12-03T16:00:00Z","updatedAt":"2026-12-03T16:00:00Z","iofogUuid":"a","flowId":null,"config":"{}","ports":[]}`)
	doc, err := microserviceDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	json.Unmarshal(doc, &got)
	if got["metadata"]["name"] != "shop/web" || got["spec"]["agent"] != "a" || len(got["spec"]) != 2 {
		t.Fatalf("document %s", doc)
	}
	for _, key := range []string{"iofogUuid", "flowId", "config", "ports"} {
		if _, ok := got["status"][key]; ok {
			t.Errorf("status has the reference's %s: %s", key, doc)
		}
	}
	if got["status"]["uuid"] != "u" || got["status"]["createdAt"] == nil {
		t.Errorf("status lost svcbridge's fields: %s", doc)
	}
}
