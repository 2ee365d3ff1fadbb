package store

import (
	neturl "net/url"
	"strings"
)

// RedactPassword returns text with every password that url carries (in
// its user info or a password parameter, raw or decoded) replaced by
// "xxxxx", so errors about a database URL can be printed. It does not need
// url to parse: a malformed URL is when errors repeat it.
func RedactPassword(url, text string) string {
	var secrets []string
	rest := url
	if _, after, ok := strings.Cut(rest, "://"); ok {
		rest = after
	}
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.Index(rest, "?"); i >= 0 {
		query = rest[i+1:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(authority[:at], ":"); ok {
			secrets = append(secrets, pw)
		}
	}
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, "password") {
			secrets = append(secrets, strings.SplitN(v, "#", 2)[0])
		}
	}
	for _, pw := range secrets {
		for _, form := range []string{pw, unescape(pw)} {
			if form != "" {
				text = strings.ReplaceAll(text, form, "xxxxx")
			}
		}
	}
	return text
}

func unescape(s string) string {
	u, err := neturl.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}
