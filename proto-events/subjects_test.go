package events_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
)

func TestSubjectBuilders(t *testing.T) {
	cases := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"agent", func() (string, error) { return events.AgentSubject("ws_1", "agent_2") }, "agents.evt.ws_1.agent_2"},
		{"agents of workspace", func() (string, error) { return events.AgentsOfWorkspace("ws_1") }, "agents.evt.ws_1.*"},
		{"secret", func() (string, error) { return events.SecretSubject("ws_1", "secret_3") }, "agents.secret.ws_1.secret_3"},
		{"workspace", func() (string, error) { return events.WorkspaceSubject("ws_1") }, "identity.evt.ws_1.workspace.ws_1"},
		{"service account", func() (string, error) { return events.ServiceAccountSubject("ws_1", "usr_3") }, "identity.evt.ws_1.account.usr_3"},
		{"api key", func() (string, error) { return events.APIKeySubject("ws_1", "key_4") }, "identity.evt.ws_1.key.key_4"},
		{"identity of workspace", func() (string, error) { return events.IdentityOfWorkspace("ws_1") }, "identity.evt.ws_1.>"},
	}
	for _, c := range cases {
		got, err := c.got()
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestSubjectBuildersRejectUnsafeIDs(t *testing.T) {
	bad := []string{"", "a.b", "a*", ">", "a b", "a\tb", "a\nb", "\x00", "a\u00a0b", "a\u2028b", "\xff"}
	for _, id := range bad {
		if err := events.ValidateToken(id); !errors.Is(err, events.ErrInvalidToken) {
			t.Errorf("ValidateToken(%q) = %v, want ErrInvalidToken", id, err)
		}
		calls := map[string]func() (string, error){
			"AgentSubject(ws)":          func() (string, error) { return events.AgentSubject(id, "agent") },
			"AgentSubject(agent)":       func() (string, error) { return events.AgentSubject("ws", id) },
			"AgentsOfWorkspace":         func() (string, error) { return events.AgentsOfWorkspace(id) },
			"WorkspaceSubject":          func() (string, error) { return events.WorkspaceSubject(id) },
			"ServiceAccountSubject(ws)": func() (string, error) { return events.ServiceAccountSubject(id, "u") },
			"ServiceAccountSubject(u)":  func() (string, error) { return events.ServiceAccountSubject("ws", id) },
			"APIKeySubject(ws)":         func() (string, error) { return events.APIKeySubject(id, "k") },
			"APIKeySubject(k)":          func() (string, error) { return events.APIKeySubject("ws", id) },
			"IdentityOfWorkspace":       func() (string, error) { return events.IdentityOfWorkspace(id) },
		}
		for name, call := range calls {
			got, err := call()
			if !errors.Is(err, events.ErrInvalidToken) || got != "" {
				t.Errorf("%s with id %q = %q, %v; want ErrInvalidToken", name, id, got, err)
			}
		}
	}
	_, err := events.APIKeySubject("ws", "k.1")
	if err == nil || !strings.Contains(err.Error(), "key id") {
		t.Errorf("error should name the argument: %v", err)
	}
	for _, ok := range []string{"ws_01HZX", "agent-9", "key_AbC123", "ünïcode", "a:b", "a/b"} {
		if err := events.ValidateToken(ok); err != nil {
			t.Errorf("ValidateToken(%q) = %v", ok, err)
		}
	}
}

// TestSubjectsMatchFilters checks the builders against the wildcard filters
// and the stream subjects with NATS matching rules.
func TestSubjectsMatchFilters(t *testing.T) {
	agent, _ := events.AgentSubject("ws", "a")
	ws, _ := events.WorkspaceSubject("ws")
	acct, _ := events.ServiceAccountSubject("ws", "u")
	key, _ := events.APIKeySubject("ws", "k")
	agentsOfWS, _ := events.AgentsOfWorkspace("ws")
	identityOfWS, _ := events.IdentityOfWorkspace("ws")
	otherKey, _ := events.APIKeySubject("other", "k")
	secret, _ := events.SecretSubject("ws", "s")

	all := []string{agent, ws, acct, key, secret}
	matches := map[string][]string{
		events.AgentsAll:             {agent},
		events.SecretsAll:            {secret},
		events.IdentityAll:           {ws, acct, key},
		events.IdentityWorkspacesAll: {ws},
		events.IdentityAccountsAll:   {acct},
		events.IdentityKeysAll:       {key},
		agentsOfWS:                   {agent},
		identityOfWS:                 {ws, acct, key},
	}
	for filter, want := range matches {
		var got []string
		for _, s := range all {
			if events.SubjectMatches(filter, s) {
				got = append(got, s)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("filter %q matches %v, want %v", filter, got, want)
		}
	}
	if events.SubjectMatches(identityOfWS, otherKey) {
		t.Errorf("%q matched another workspace's %q", identityOfWS, otherKey)
	}

	streams := events.Streams()
	if len(streams) != 7 || streams[0].Name != events.IdentityStream || streams[1].Name != events.AgentsStream ||
		streams[2].Name != events.TicketsStream || streams[3].Name != events.PlatformStream ||
		streams[4].Name != events.TestingStream || streams[5].Name != events.TestRunsStream || streams[6].Name != events.WebhooksStream {
		t.Fatalf("Streams() = %+v", streams)
	}
	streamOf := func(subject string) string {
		var found []string
		for _, st := range streams {
			for _, f := range st.Subjects {
				if events.SubjectMatches(f, subject) {
					found = append(found, st.Name)
				}
			}
		}
		if len(found) != 1 {
			t.Fatalf("subject %q is captured by streams %v, want exactly one", subject, found)
		}
		return found[0]
	}
	for _, s := range all {
		typStream := map[string]string{agent: "AGENTS", secret: "AGENTS", ws: "IDENTITY", acct: "IDENTITY", key: "IDENTITY"}[s]
		if got := streamOf(s); got != typStream {
			t.Errorf("subject %q is in stream %s, want %s", s, got, typStream)
		}
	}
	streams[0].Subjects[0] = "mutated"
	if events.Streams()[0].Subjects[0] != events.IdentityAll {
		t.Error("Streams() shares its slices with callers")
	}
}

func TestParseSubjects(t *testing.T) {
	agent, _ := events.AgentSubject("ws_1", "agent_2")
	if ws, id, err := events.ParseAgentSubject(agent); err != nil || ws != "ws_1" || id != "agent_2" {
		t.Errorf("ParseAgentSubject(%q) = %q, %q, %v", agent, ws, id, err)
	}
	for _, c := range []struct{ subject, kind, id string }{
		{mustSubject(events.WorkspaceSubject("ws_1")), events.IdentityKindWorkspace, "ws_1"},
		{mustSubject(events.ServiceAccountSubject("ws_1", "usr_3")), events.IdentityKindAccount, "usr_3"},
		{mustSubject(events.APIKeySubject("ws_1", "key_4")), events.IdentityKindKey, "key_4"},
	} {
		ws, kind, id, err := events.ParseIdentitySubject(c.subject)
		if err != nil || ws != "ws_1" || kind != c.kind || id != c.id {
			t.Errorf("ParseIdentitySubject(%q) = %q, %q, %q, %v", c.subject, ws, kind, id, err)
		}
	}
	for _, bad := range []string{"", "agents.evt.ws", "agents.evt.ws.a.b", "agents.cmd.ws.a", "agents.evt.ws.*", "identity.evt.ws.key.k"} {
		if _, _, err := events.ParseAgentSubject(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("ParseAgentSubject(%q) error = %v", bad, err)
		}
	}
	for _, bad := range []string{"", "identity.evt.ws.key", "identity.evt.ws.thing.k", "identity.evt.ws.key.*", "identity.cmd.ws.key.k", "agents.evt.ws.a"} {
		if _, _, _, err := events.ParseIdentitySubject(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("ParseIdentitySubject(%q) error = %v", bad, err)
		}
	}
}

func mustSubject(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestTicketAndPlatformSubjects(t *testing.T) {
	if s, err := events.TicketSubject("ws", "tkt_1"); err != nil || s != "tickets.evt.ws.tkt_1" {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := events.TicketSubject("ws", "a.b"); err == nil {
		t.Fatal("unsafe ticket id accepted")
	}
	if s, err := events.PlatformSubject("ws", "conversation_started"); err != nil || s != "platform.evt.ws.conversation_started" {
		t.Fatalf("%q %v", s, err)
	}
	if ws, name, ok := events.ParsePlatformSubject("platform.evt.ws.conversation_started"); !ok || ws != "ws" || name != "conversation_started" {
		t.Fatalf("parsed %q %q %v", ws, name, ok)
	}
	for _, s := range []string{"platform.evt.ws", "platform.evt.ws.a.b", "tickets.evt.ws.tkt_1", "platform.evt..x", "platform.evt.ws."} {
		if _, _, ok := events.ParsePlatformSubject(s); ok {
			t.Errorf("%q parsed as a platform subject", s)
		}
	}
}

// builders is every subject builder of the package, each taking the same
// caller-supplied token in every position.
func builders(tok string) map[string]func() (string, error) {
	return map[string]func() (string, error){
		"AgentSubject":              func() (string, error) { return events.AgentSubject(tok, tok) },
		"AgentsOfWorkspace":         func() (string, error) { return events.AgentsOfWorkspace(tok) },
		"WorkspaceSubject":          func() (string, error) { return events.WorkspaceSubject(tok) },
		"ServiceAccountSubject":     func() (string, error) { return events.ServiceAccountSubject(tok, tok) },
		"APIKeySubject":             func() (string, error) { return events.APIKeySubject(tok, tok) },
		"UserSubject":               func() (string, error) { return events.UserSubject(tok, tok) },
		"IdentityOfWorkspace":       func() (string, error) { return events.IdentityOfWorkspace(tok) },
		"TicketSubject":             func() (string, error) { return events.TicketSubject(tok, tok) },
		"PlatformSubject":           func() (string, error) { return events.PlatformSubject(tok, tok) },
		"TestingSubject":            func() (string, error) { return events.TestingSubject(tok, events.TestingKindTest, tok) },
		"RunSubject":                func() (string, error) { return events.RunSubject(tok, tok, tok) },
		"RunsOfInvocation":          func() (string, error) { return events.RunsOfInvocation(tok, tok) },
		"RunFailureSubject":         func() (string, error) { return events.RunFailureSubject(tok, tok, tok) },
		"ResultGroupSubject":        func() (string, error) { return events.ResultGroupSubject(tok, tok, tok) },
		"ResultGroupsOfInvocation":  func() (string, error) { return events.ResultGroupsOfInvocation(tok, tok) },
		"TestRunsQueuedSubject":     func() (string, error) { return events.TestRunsQueuedSubject(tok, tok) },
		"TestRunsCompletingSubject": func() (string, error) { return events.TestRunsCompletingSubject(tok, tok) },
		"TestJobSubject":            func() (string, error) { return events.TestJobSubject(tok, tok, tok) },
		"TestBucketingJobSubject":   func() (string, error) { return events.TestBucketingJobSubject(tok, tok, tok) },
		"TestJobsOfInvocation":      func() (string, error) { return events.TestJobsOfInvocation(tok, tok) },
		"TestCountSubject":          func() (string, error) { return events.TestCountSubject(tok, 1, tok) },
		"WebhookSubject":            func() (string, error) { return events.WebhookSubject(tok, tok) },
		"WebhookDeliverySubject":    func() (string, error) { return events.WebhookDeliverySubject(tok, tok) },
		"WebhookDeferredSubject":    func() (string, error) { return events.WebhookDeferredSubject(tok, tok, tok) },
		"WebhookAttemptSubject":     func() (string, error) { return events.WebhookAttemptSubject(tok, tok) },
		"WebhookAttemptLogSubject":  func() (string, error) { return events.WebhookAttemptLogSubject(tok, tok) },
	}
}

// Every builder refuses a token that is unsafe or longer than
// MaxTokenLen with ErrInvalidToken and never returns a subject with it.
func TestEveryBuilderRefusesUnsafeAndOversizedTokens(t *testing.T) {
	for _, tok := range []string{"", "a.b", "*", ">", "a b", "a\r\nPUB x 1", strings.Repeat("x", events.MaxTokenLen+1), strings.Repeat("y", 5000)} {
		for name, build := range builders(tok) {
			got, err := build()
			if !errors.Is(err, events.ErrInvalidToken) || got != "" {
				t.Errorf("%s(%.20q…) = %.40q, %v; want ErrInvalidToken", name, tok, got, err)
			}
			if err != nil && strings.Contains(err.Error(), strings.Repeat("y", 50)) {
				t.Errorf("%s: the error repeats the caller's token: %.80s…", name, err)
			}
		}
	}
	for name, build := range builders(strings.Repeat("z", events.MaxTokenLen)) {
		if _, err := build(); err != nil {
			t.Errorf("%s refused a token of MaxTokenLen bytes: %v", name, err)
		}
	}
}

// FuzzSubjectBuilders: whatever a builder accepts is a subject of
// well-formed tokens (no empty token, no wildcard where none was asked
// for, no white space), short enough for any NATS control line.
func FuzzSubjectBuilders(f *testing.F) {
	for _, s := range []string{"ws_1", "", "a.b", "x y", "*", ">", "\xff", strings.Repeat("q", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		for name, build := range builders(tok) {
			s, err := build()
			if err != nil {
				continue
			}
			if len(s) > 1024 {
				t.Fatalf("%s built a %d-byte subject", name, len(s))
			}
			for _, part := range strings.Split(s, ".") {
				if part == "" || strings.ContainsAny(part, " \t\r\n") || ((part == "*" || part == ">") && part != s[len(s)-1:]) {
					t.Fatalf("%s built %q", name, s)
				}
				if strings.ContainsAny(part, "*>") && len(part) > 1 {
					t.Fatalf("%s built %q", name, s)
				}
			}
		}
	})
}
