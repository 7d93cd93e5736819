package forgejo

import (
	"strings"
	"testing"
)

// asciiLower must agree with strings.ToLower on every ASCII byte, or a
// plain name and an escaped or non-ASCII one could miss each other.
func TestASCIILowerAgrees(t *testing.T) {
	for b := 0; b < 0x80; b++ {
		if got, want := string(rune(asciiLower(byte(b)))), strings.ToLower(string(rune(b))); got != want {
			t.Errorf("asciiLower(%q) = %q, strings.ToLower says %q", rune(b), got, want)
		}
	}
}

func TestCheckMembers(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		body string
		ok   bool
	}{
		{`{"id":1,"name":"x"}`, true},
		{`{"id":1,"id":2}`, false},
		{`{"id":1,"Id":2}`, false},
		{`{"id":1,"\u0069d":2}`, false},
		{`{"ID":1,"\u0069d":2}`, false},
		{`{"é":1,"É":2}`, false},
		{`{"\u00e9":1,"É":2}`, false},
		{`{"ſ":1,"s":2}`, true}, // strings.ToLower keeps ſ; Token did too
		{`{"a":{"b":1},"a":2}`, false},
		{`{"a":{"a":1},"b":{"a":2}}`, true},
		{`[{"a":1},{"a":2}]`, true},
		{`{"a":[{"a":1},{"a":2}],"b":1}`, true},
		{`{"a":["a","a"],"b":"a"}`, true},
		{`{"a":"{\"a\":1,\"a\":2}","b":"x,\"y"}`, true},
		{`{"a\"":1,"a\\":2,"a":3}`, true},
		{`{"a\\":1,"A\\":2}`, false},
		{`{"a":"\\","a":1}`, false},
		{` { "a" : 1 , "b" : [ 1 , { "c" : 2 , "C" : 3 } ] } `, false},
		{`"a"`, true},
		{`{}`, true},
		{deep(maxNativeDepth), true},
		{deep(maxNativeDepth + 1), false},
		{`{"a":1`, false},
		{`{"a":"\ud800"}`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":1} {"a":1}`, false},
		{`{"id":1e999}`, false},
		{`{"id":-1e999}`, false},
		{`{"id":1e-999,"n":-0.5E+3,"m":123456789012345678901234567890}`, true},
		{`{"a":[1,-2,3.5e2],"b":0}`, true},
	}
	for _, tc := range cases {
		err := checkNativeJSON([]byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("checkNativeJSON(%s) = %v, want ok=%v", tc.body, err, tc.ok)
		}
		if ref := referenceNativeJSON([]byte(tc.body)); (ref == "") != (err == nil) {
			t.Errorf("%s: single pass says %v, the Token walk %q", tc.body, err, ref)
		}
	}
}

// BenchmarkCheckNativeJSON checks a repository answer of the Core
// emulator's shape, as every anonymous read does.
func BenchmarkCheckNativeJSON(b *testing.B) {
	body := []byte(`{"id":7,"owner":{"id":3,"login":"demo","full_name":"Demo","avatar_url":"http://x/a.png"},"name":"public","full_name":"demo/public","description":"A \"demo\" repository — with escapes\n","empty":false,"private":false,"fork":false,"template":false,"parent":null,"mirror":false,"size":42,"language":"Go","html_url":"http://x/demo/public","ssh_url":"git@x:demo/public.git","clone_url":"http://x/demo/public.git","website":"","stars_count":0,"forks_count":0,"watchers_count":1,"open_issues_count":2,"open_pr_counter":1,"release_counter":0,"default_branch":"main","archived":false,"created_at":"2026-11-29T00:00:00Z","updated_at":"2026-11-29T00:00:00Z","permissions":{"admin":false,"push":false,"pull":true},"has_issues":true,"has_wiki":false,"has_pull_requests":true,"topics":["a","b"]}`)
	b.Run("single-pass", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := checkNativeJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The recursive Decoder.Token walk of the tests, for scale: the way
	// checkNativeJSON worked before strictjson.
	b.Run("token-walk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if r := referenceNativeJSON(body); r != "" {
				b.Fatal(r)
			}
		}
	})
}

// TestEntityRefusals pins what entity accepts: a member object whose id is
// a positive JSON integer within int64, and nothing else, each refusal
// naming the path it was asked about.
func TestEntityRefusals(t *testing.T) {
	tests := []struct {
		name, grant string
		wantID      int64
		wantReason  string
	}{
		{"sound", `{"agent":{"id":7,"login":"bot"}}`, 7, ""},
		{"absent", `{}`, 0, "grant.agent is missing"},
		{"null", `{"agent":null}`, 0, "grant.agent is missing"},
		{"not an object", `{"agent":[7]}`, 0, "grant.agent is missing"},
		{"no id", `{"agent":{"login":"bot"}}`, 0, "grant.agent.id is not a positive integer"},
		{"zero id", `{"agent":{"id":0}}`, 0, "grant.agent.id is not a positive integer"},
		{"negative id", `{"agent":{"id":-7}}`, 0, "grant.agent.id is not a positive integer"},
		{"string id", `{"agent":{"id":"7"}}`, 0, "grant.agent.id is not a positive integer"},
		{"id beyond int64", `{"agent":{"id":9223372036854775808}}`, 0, "grant.agent.id is not a positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := asObject([]byte(tt.grant))
			if !ok {
				t.Fatalf("%s is not an object", tt.grant)
			}
			e, id, reason := g.entity("agent", "grant.agent")
			if id != tt.wantID || reason != tt.wantReason {
				t.Fatalf("entity = %d, %q; want %d, %q", id, reason, tt.wantID, tt.wantReason)
			}
			if (reason == "") != (e != nil) {
				t.Fatalf("entity object = %v with reason %q", e, reason)
			}
		})
	}
}
