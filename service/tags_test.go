package service

import (
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var rule = TagRule{Prefix: DefaultTagPrefix}

func TestIsDistributionToken(t *testing.T) {
	tests := []struct {
		tag  string
		want bool
	}{
		{"checkout", true},
		{"all", true},
		{" spaced ", true}, // not trimmed: both directions compare it verbatim
		{"", false},
		{"a:b", false},
		{"service.beta.kubernetes.io/aws-load-balancer-type: nlb", false},
		{"a=b", false},
		{":", false},
	}
	for _, tt := range tests {
		if got := IsDistributionToken(tt.tag); got != tt.want {
			t.Errorf("IsDistributionToken(%q) = %v, want %v", tt.tag, got, tt.want)
		}
	}
}

func TestAgentTagFor(t *testing.T) {
	if got := rule.AgentTagFor("checkout"); got != "service.iofog.org/tag: checkout" {
		t.Fatalf("got %q", got)
	}
	if got := (TagRule{Prefix: "service.datasance.com/tag"}).AgentTagFor("all"); got != "service.datasance.com/tag: all" {
		t.Fatalf("got %q", got)
	}
}

func TestAgentTokens(t *testing.T) {
	tests := []struct {
		name   string
		tags   []string
		tokens []string
		all    bool
	}{
		{"none", nil, nil, false},
		{"one token", []string{"service.iofog.org/tag: checkout"}, []string{"checkout"}, false},
		{"all", []string{"x", "service.iofog.org/tag: all"}, []string{"all"}, true},
		{"bare tag needs the prefix", []string{"checkout"}, nil, false},
		{"no space after colon", []string{"service.iofog.org/tag:checkout"}, nil, false},
		{"extra space is part of the token", []string{"service.iofog.org/tag:  checkout"}, []string{" checkout"}, false},
		{"empty token", []string{"service.iofog.org/tag: "}, nil, false},
		{"token with colon", []string{"service.iofog.org/tag: a:b"}, nil, false},
		{"token with equals", []string{"service.iofog.org/tag: a=b"}, nil, false},
		{"longer prefix", []string{"service.iofog.org/tagX: checkout"}, nil, false},
		{"other prefix", []string{"service.datasance.com/tag: checkout"}, nil, false},
		{"duplicates once, in order", []string{
			"service.iofog.org/tag: b", "service.iofog.org/tag: a", "service.iofog.org/tag: b",
		}, []string{"b", "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens, all := rule.AgentTokens(tt.tags)
			if !reflect.DeepEqual(tokens, tt.tokens) || all != tt.all {
				t.Fatalf("got %q, %v; want %q, %v", tokens, all, tt.tokens, tt.all)
			}
		})
	}
}

// The agent table of seeds 000 and 001.
func TestSeedAgentsSelectServices(t *testing.T) {
	checkout := []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}
	payments := []string{"payments"}
	untagged := []string(nil)
	agents := []struct {
		name string
		tags []string
		want map[string]bool // service → selected
	}{
		{"plant-a", []string{"service.iofog.org/tag: checkout"}, map[string]bool{"checkout": true, "payments": false, "untagged": false}},
		{"plant-b", []string{"service.iofog.org/tag: all"}, map[string]bool{"checkout": true, "payments": true, "untagged": true}},
		{"plant-c", []string{"checkout"}, map[string]bool{"checkout": false, "payments": false, "untagged": false}},
		{"no space", []string{"service.iofog.org/tag:checkout"}, map[string]bool{"checkout": false, "payments": false, "untagged": false}},
		{"test-1 of the Agent example", []string{"service.iofog.org/tag: checkout", "genertic-agent-tag"},
			map[string]bool{"checkout": true, "payments": false, "untagged": false}},
	}
	services := map[string][]string{"checkout": checkout, "payments": payments, "untagged": untagged}
	for _, a := range agents {
		for svc, tags := range services {
			if got := rule.Selects(a.tags, tags); got != a.want[svc] {
				t.Errorf("%s selects %s = %v, want %v", a.name, svc, got, a.want[svc])
			}
		}
	}
}

// Seed 000: the annotation tag is skipped when looking for agents.
func TestSelectingAgentTagsSkipsAnnotationTags(t *testing.T) {
	got := rule.SelectingAgentTags([]string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb", "a=b", "", "checkout"})
	want := []string{"service.iofog.org/tag: all", "service.iofog.org/tag: checkout"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestServiceTagAllIsNotSpecial(t *testing.T) {
	// A Service tag "all" only reaches agents tagged "<prefix>: all", which
	// select every Service anyway.
	if rule.Selects([]string{"service.iofog.org/tag: checkout"}, []string{"all"}) {
		t.Fatal("service tag all must not select an agent tagged checkout")
	}
}

func TestExplain(t *testing.T) {
	svc := []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}
	e := rule.Explain([]string{
		"service.iofog.org/tag: checkout",
		"service.iofog.org/tag: payments",
		"checkout",
		"service.iofog.org/tag:checkout",
		"service.iofog.org/tag: ",
		"service.iofog.org/tag: a:b",
		"service.iofog.org/tag: a=b",
		"service.iofog.org/tag: all",
	}, svc)
	if !e.Selected {
		t.Fatal("want selected")
	}
	wantCodes := []ReasonCode{
		ReasonMatched, ReasonNotOnService, ReasonNoPrefix, ReasonNoSpace,
		ReasonEmptyToken, ReasonTokenColon, ReasonTokenEquals, ReasonAll,
	}
	for i, r := range e.Tags {
		if r.Code != wantCodes[i] {
			t.Errorf("tag %q: code %s, want %s", r.AgentTag, r.Code, wantCodes[i])
		}
		if r.Message == "" {
			t.Errorf("tag %q: empty message", r.AgentTag)
		}
	}
	if e.Tags[3].Message != `the colon must be followed by exactly one space, as in "service.iofog.org/tag: checkout"` {
		t.Errorf("no-space message = %q", e.Tags[3].Message)
	}
	if e.Tags[0].Token != "checkout" || e.Tags[3].Token != "checkout" {
		t.Errorf("tokens = %q, %q", e.Tags[0].Token, e.Tags[3].Token)
	}
	if !reflect.DeepEqual(e.IgnoredServiceTags, svc[1:]) {
		t.Errorf("ignored = %q", e.IgnoredServiceTags)
	}

	e = rule.Explain([]string{"checkout"}, svc)
	if e.Selected {
		t.Fatal("plant-c must not be selected")
	}
}

// The annotation table of seed 000, plus decision 4's '=' rule.
func TestAnnotations(t *testing.T) {
	tests := []struct {
		name string
		tags []string
		want map[string]string
	}{
		{"bare tag has an empty value", []string{"checkout"}, map[string]string{"checkout": ""}},
		{"aws nlb", []string{"service.beta.kubernetes.io/aws-load-balancer-type: nlb"},
			map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
		{"text after a second colon is dropped", []string{"a:b:c"}, map[string]string{"a": "b"}},
		{"url value is cut at its colon", []string{"url: http://x"}, map[string]string{"url": "http"}},
		{"both sides trimmed", []string{" k : v w "}, map[string]string{"k": "v w"}},
		{"trailing colon", []string{"checkout:"}, map[string]string{"checkout": ""}},
		{"equals without colon", []string{"a=b"}, map[string]string{"a": "b"}},
		{"equals splits once", []string{"a = b=c"}, map[string]string{"a": "b=c"}},
		{"colon wins over equals", []string{"a=b: c"}, map[string]string{"a=b": "c"}},
		{"later duplicates overwrite", []string{"k: 1", "k: 2", "k"}, map[string]string{"k": ""}},
		{"seed 000 kubernetes example", []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"},
			map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
		{"no tags", nil, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Annotations(tt.tags); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateAnnotations(t *testing.T) {
	tests := []struct {
		name string
		tags []string
		want string // prefix of the message; "" = valid
	}{
		{"seed tags", []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}, ""},
		{"uppercase keys are fine", []string{"MyKey: v", "Example.COM/Name"}, ""},
		{"equals tag", []string{"a=b"}, ""},
		{"any value", []string{"k: !@# $%^ {json}"}, ""},
		{"key with space", []string{"not a key"}, "Invalid tag 'not a key': name part must consist of"},
		{"empty key", []string{": v"}, "Invalid tag ': v': name part must be non-empty"},
		{"two slashes", []string{"a/b/c: v"}, "Invalid tag 'a/b/c: v': a valid label key must consist of"},
		{"bad prefix", []string{"-a/b"}, "Invalid tag '-a/b': prefix part a lowercase RFC 1123 subdomain"},
		{"name part too long", []string{strings.Repeat("n", 64)}, "Invalid tag '" + strings.Repeat("n", 64) + "': name part must be no more than 63 bytes"},
		{"first bad tag wins", []string{"ok", "b a d", "w o r s e"}, "Invalid tag 'b a d':"},
		{"total size over 256 KiB", manyBigTags(300, 1000), "Invalid tags: their annotations total 300000 bytes, more than the Kubernetes limit of 262144 bytes"},
		{"overwritten values do not count", append(manyBigTags(1, 1000), repeatTag("k0: v", 300)...), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateAnnotations(tt.tags)
			if tt.want == "" {
				wantMessage(t, err, "")
				return
			}
			ve, ok := err.(*ValidationError)
			if !ok || !strings.HasPrefix(ve.Message, tt.want) {
				t.Fatalf("error = %v, want a message starting %q", err, tt.want)
			}
		})
	}
}

// manyBigTags returns n tags "k<i>: vvv..." whose key plus value is size bytes.
func manyBigTags(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		k := "k" + strconv.Itoa(i)
		out[i] = k + ": " + strings.Repeat("v", size-len(k))
	}
	return out
}

// Property (design decision 3): the agent → services direction (Selects),
// its definition through AgentTokens, the service → agents lookup
// (SelectingAgentTags) and Explain always agree.
func TestTagDirectionsAgree(t *testing.T) {
	pieces := []string{
		"", "service.iofog.org/tag", ":", ": ", " ", "=", "a", "b", "all", "checkout", "service.iofog.org/tag: ",
	}
	rnd := rand.New(rand.NewSource(1))
	randomTag := func() string {
		var b strings.Builder
		for n := rnd.Intn(4); n >= 0; n-- {
			b.WriteString(pieces[rnd.Intn(len(pieces))])
		}
		return b.String()
	}
	simpleTokens := []string{"a", "b", "all", "checkout"}
	// Agents mostly carry prefixed tags and services mostly plain tokens,
	// or nearly every case would trivially select nothing.
	randomAgentTag := func() string {
		switch rnd.Intn(5) {
		case 0, 1:
			return rule.AgentTagFor(simpleTokens[rnd.Intn(len(simpleTokens))])
		case 2:
			return rule.AgentTagFor(randomTag())
		}
		return randomTag()
	}
	randomServiceTag := func() string {
		if rnd.Intn(2) == 0 {
			return simpleTokens[rnd.Intn(len(simpleTokens))]
		}
		return randomTag()
	}
	randomTags := func(gen func() string) []string {
		tags := make([]string, rnd.Intn(4))
		for i := range tags {
			tags[i] = gen()
		}
		return tags
	}

	selected := 0
	const runs = 100000
	for i := 0; i < runs; i++ {
		agent, svc := randomTags(randomAgentTag), randomTags(randomServiceTag)
		got := rule.Selects(agent, svc)

		tokens, all := rule.AgentTokens(agent)
		byTokens := all
		for _, s := range svc {
			byTokens = byTokens || (IsDistributionToken(s) && slices.Contains(tokens, s))
		}

		byServiceSide := slices.Contains(agent, rule.AgentTagFor(AllToken))
		for _, s := range svc {
			byServiceSide = byServiceSide || (IsDistributionToken(s) && slices.Contains(agent, rule.AgentTagFor(s)))
		}

		byLookup := false
		for _, want := range rule.SelectingAgentTags(svc) {
			byLookup = byLookup || slices.Contains(agent, want)
		}

		explained := rule.Explain(agent, svc).Selected

		if got != byTokens || got != byServiceSide || got != byLookup || got != explained {
			t.Fatalf("agent %q, service %q: Selects=%v tokens=%v serviceSide=%v lookup=%v explain=%v",
				agent, svc, got, byTokens, byServiceSide, byLookup, explained)
		}
		if got {
			selected++
		}
	}
	// Guard against a generator that misses either outcome.
	if selected < runs/20 || selected > runs*19/20 {
		t.Fatalf("%d of %d random cases selected; the generator is too lopsided", selected, runs)
	}
}

func TestListenReason(t *testing.T) {
	checkout, all := "service.iofog.org/tag: checkout", "service.iofog.org/tag: all"
	svc := []string{"checkout", "payments", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}
	for _, c := range []struct {
		name      string
		agentTags []string
		svcTags   []string
		hub       bool
		want      string
	}{
		{"a token the service carries", []string{"site: a", checkout}, svc, false, checkout},
		{"all", []string{all}, svc, false, all},
		{"the first selecting tag, in the agent's order", []string{all, checkout}, svc, false, all},
		{"the first selecting tag, the other way round", []string{checkout, all}, svc, false, checkout},
		{"a tag wins over the hub", []string{checkout}, svc, true, checkout},
		{"the hub, when no tag selects", []string{"service.iofog.org/tag: orders"}, svc, true, ReasonHub},
		{"the hub, with no tags", nil, nil, true, ReasonHub},
		{"not listening", []string{"service.iofog.org/tag: orders", "service.iofog.org/tag:checkout"}, svc, false, ""},
		{"an annotation tag selects nothing", []string{"service.iofog.org/tag: nlb"}, svc[2:], false, ""},
	} {
		if got := rule.ListenReason(c.agentTags, c.svcTags, c.hub); got != c.want {
			t.Errorf("%s: ListenReason = %q, want %q", c.name, got, c.want)
		}
		// It listens exactly when its tags select the service or it is the hub.
		if listens := rule.Selects(c.agentTags, c.svcTags) || c.hub; listens != (c.want != "") {
			t.Errorf("%s: ListenReason %q, but listens %v", c.name, c.want, listens)
		}
	}
}
