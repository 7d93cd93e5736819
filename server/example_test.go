package server

import (
	"os"
	"strings"
	"testing"
)

// examplePath is the shipped example configuration (DESIGN §10).
const examplePath = "../configs/agent-gateway.example.yaml"

// TestExampleConfig keeps the example file and the settings table in step:
// the file parses with no unknown, repeated or secret keys, every value in
// it is valid, and every key of the table appears in it (a secret, which
// may not be written in YAML, by its environment variable in a comment).
func TestExampleConfig(t *testing.T) {
	text, err := os.ReadFile(examplePath)
	if os.IsNotExist(err) {
		t.Skipf("%s does not exist yet", examplePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	values, problems := readYAML(examplePath)
	for _, p := range problems {
		t.Errorf("example: %s", p)
	}
	c := Default()
	for _, s := range settings {
		v, present := values[s.key]
		switch {
		case s.envOnly && present:
			t.Errorf("example sets the secret %s", s.key)
		case s.envOnly:
			if !strings.Contains(string(text), s.Env()) {
				t.Errorf("example does not mention the secret %s by its variable %s", s.key, s.Env())
			}
		case !present:
			t.Errorf("example lacks the key %s", s.key)
		default:
			if err := s.set(&c, v); err != nil {
				t.Errorf("example value of %s: %v", s.key, err)
			}
		}
	}
}
