package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestNamesShownVisibly: names a registrant or an identity provider chose
// (a client's name, a subject) and names an operator typed (a project's)
// are printed with their bidirectional, zero-width and control characters
// written out as escapes, in the text output and in the raw --json output,
// whose values still decode to the stored names.
func TestNamesShownVisibly(t *testing.T) {
	st := storetest.SQLite(t)
	ctx := context.Background()
	clientName := "Claude\u200b Code \u202eexe.txt\u2069"
	c, err := st.RegisterClient(ctx, clientName, []string{"http://127.0.0.1:9/cb"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreateProject(ctx, "", "docs\u2066\ufeff")
	if err != nil {
		t.Fatal(err)
	}
	subject := "alice\u200f\U000e0041"
	if err := st.AddMember(ctx, p.ID, subject); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsent(ctx, p.ID, subject, c.ClientID, []string{"documents:read"}); err != nil {
		t.Fatal(err)
	}
	raw := []string{"\u200b", "\u202e", "\u2069", "\u2066", "\ufeff", "\u200f", "\U000e0041"}
	for _, tc := range []struct {
		args  []string
		want  string // in the text output
		value string // a value the --json output decodes to
	}{
		{[]string{"list-clients"}, `Claude\u200b Code \u202eexe.txt\u2069`, clientName},
		{[]string{"list-projects"}, `docs\u2066\ufeff`, p.Name},
		{[]string{"list-consents", "--project-id", p.ID}, `alice\u200f\U000e0041`, subject},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			open := func(context.Context, []string, io.Writer) (store.Store, error) { return nopClose{st}, nil }
			if err := Run(t.Context(), tc.args, &out, io.Discard, Target{OpenStore: open, Scopes: testScopes}); err != nil {
				t.Fatal(err)
			}
			js, err := run(t, st, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{out.String(), js} {
				for _, r := range raw {
					if strings.Contains(text, r) {
						t.Errorf("output carries %U raw:\n%s", []rune(r)[0], text)
					}
				}
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("text output lacks %s:\n%s", tc.want, out.String())
			}
			var arr []map[string]any
			if err := json.Unmarshal([]byte(js), &arr); err != nil {
				t.Fatalf("--json output does not decode: %v\n%s", err, js)
			}
			got := map[string]bool{}
			for _, rec := range arr {
				for _, v := range rec {
					if s, ok := v.(string); ok {
						got[s] = true
					}
				}
			}
			if !got[tc.value] {
				t.Errorf("--json values do not decode to %q: %v", tc.value, arr)
			}
		})
	}
}

// TestVisibleJSON: escaping hidden characters in encoded JSON keeps the
// value and leaves everything else byte for byte.
func TestVisibleJSON(t *testing.T) {
	in := map[string]string{"a": "x\u202ey\u007f\U000e0041z", "b": "plain 編集 🤖 <&>"}
	b, _ := json.Marshal(in)
	out := visibleJSON(b)
	if !bytes.Contains(out, []byte(`x\u202ey\u007f\udb40\udc41z`)) || !bytes.Contains(out, []byte("plain 編集 🤖")) {
		t.Fatalf("%s", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["a"] != in["a"] || back["b"] != in["b"] {
		t.Fatalf("decoded %q, %v; want %q", back, err, in)
	}
	if plain := []byte(`{"a":"b"}`); !bytes.Equal(visibleJSON(plain), plain) {
		t.Fatal("plain JSON changed")
	}
}
