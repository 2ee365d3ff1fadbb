package main

import (
	"context"
	"strings"
	"testing"
)

// TestRouterSyncLongPollWithinTheServers: a --long-poll the server cannot
// hold is refused at the start, saying the range: under a second it would
// ask again at once without end, over 5 minutes each ask would be refused.
func TestRouterSyncLongPollWithinTheServers(t *testing.T) {
	for _, c := range []struct{ longPoll, want string }{
		{"500ms", "invalid setting --long-poll: 500ms is not from 1s to 5m0s"},
		{"10m", "invalid setting --long-poll: 10m0s is not from 1s to 5m0s"},
		{"0s", `invalid setting --long-poll: "0s" is not a positive duration`},
	} {
		settings := map[string]string{"server": "http://127.0.0.1:1", "long-poll": c.longPoll, "resync": "1m",
			"router": "127.0.0.1:1", "log-level": "error", "log-format": "text"}
		err := runRouterSync(context.Background(), func(name string) string { return settings[name] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--long-poll %s: %v, want %q", c.longPoll, err, c.want)
		}
	}
}
