package store

import "testing"

func TestRedactPassword(t *testing.T) {
	cases := []struct{ url, text, want string }{
		{"postgres://u:S3cret@h/db", `parse "postgres://u:S3cret@h/db": bad`, `parse "postgres://u:xxxxx@h/db": bad`},
		{"postgres://u:S3cret@h:x/db", `parse "postgres://u:S3cret@h:x/db": invalid port ":x" after host`, `parse "postgres://u:xxxxx@h:x/db": invalid port ":x" after host`},
		{"postgres://u:p%40ss@h/db", "p%40ss and p@ss", "xxxxx and xxxxx"},
		{"postgres://u:a:b@c@h/db", "a:b@c", "xxxxx"},
		{"postgres://u@h/db?sslmode=disable&password=S3cret", "password=S3cret", "password=xxxxx"},
		{"postgres://u@h/db", "nothing to hide: u@h", "nothing to hide: u@h"},
		{"postgres://u:@h/db", "u:@h", "u:@h"},
		{"/tmp/svcbridge.db", "/tmp/svcbridge.db", "/tmp/svcbridge.db"},
	}
	for _, c := range cases {
		if got := RedactPassword(c.url, c.text); got != c.want {
			t.Errorf("RedactPassword(%q, %q) = %q, want %q", c.url, c.text, got, c.want)
		}
	}
}
