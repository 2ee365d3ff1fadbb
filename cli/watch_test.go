package cli

import (
	"strings"
	"testing"
)

// TestWatchColumnsStayAligned: a watch's change rows line up with its
// initial table, and a wider cell widens the columns from then on.
func TestWatchColumnsStayAligned(t *testing.T) {
	var b strings.Builder
	c := &columns{w: &b, header: []string{"EVENT", "NAME", "STATUS"}, widths: []int{len("MODIFIED")}}
	steps := [][][]string{
		{{"ADDED", "checkout", "ready"}, {"ADDED", "vendor", ""}},
		{{"MODIFIED", "vendor", "failed"}},
		{},
		{{"ADDED", "a-much-longer-name", "pending"}},
	}
	for _, rows := range steps {
		if err := c.print(rows); err != nil {
			t.Fatal(err)
		}
	}
	want := "" +
		"EVENT     NAME      STATUS\n" +
		"ADDED     checkout  ready\n" +
		"ADDED     vendor    -\n" +
		"MODIFIED  vendor    failed\n" +
		"ADDED     a-much-longer-name  pending\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestWatchColumnsWithoutHeader: --no-headers prints rows only, and
// nothing at all before the first row.
func TestWatchColumnsWithoutHeader(t *testing.T) {
	var b strings.Builder
	c := &columns{w: &b, widths: []int{len("MODIFIED")}}
	c.print(nil)
	if b.Len() != 0 {
		t.Fatalf("printed %q for no rows", b.String())
	}
	c.print([][]string{{"ADDED", "x"}})
	if b.String() != "ADDED     x\n" {
		t.Errorf("got %q", b.String())
	}
}
