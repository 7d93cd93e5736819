package server

import (
	"os"
	"strings"
	"testing"
)

// examplePath is the shipped example configuration
// (docs/architecture.md#configuration).
const examplePath = "../configs/agent-gateway.example.yaml"

// exampleValues are the keys whose value in the example file deliberately
// differs from the default, each with why. Every other key shows its
// default there, so the file doubles as the list of defaults and cannot
// drift from the settings table.
var exampleValues = map[string]string{
	"public_url": "its default is derived (http://<listen>); the example writes out what it is for the example's listen",
}

// TestExampleConfig keeps the example file and the settings table in step:
// the file parses with no unknown, repeated or secret keys, every key of
// the table appears in it with its environment variable beside it (a
// secret, which may not be written in YAML, by its variable alone), and
// every value in it is valid and is the row's default, unless
// exampleValues says why not.
func TestExampleConfig(t *testing.T) {
	text, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	values, problems := readYAML(examplePath)
	for _, p := range problems {
		t.Errorf("example: %s", p)
	}
	d := Default()
	for _, s := range settings {
		v, present := values[s.key]
		if !strings.Contains(string(text), s.Env()) {
			t.Errorf("example does not name %s's variable %s", s.key, s.Env())
		}
		switch {
		case s.envOnly && present:
			t.Errorf("example sets the secret %s", s.key)
		case s.envOnly:
		case !present:
			t.Errorf("example lacks the key %s", s.key)
		default:
			c := Default()
			if err := s.set(&c, v); err != nil {
				t.Errorf("example value of %s: %v", s.key, err)
				continue
			}
			why, deliberate := exampleValues[s.key]
			same := s.show(&c) == s.show(&d)
			switch {
			case !same && !deliberate:
				t.Errorf("example gives %s = %q, its default is %q (def %q); write the default, or say why in exampleValues", s.key, v, s.show(&d), s.def)
			case same && deliberate:
				t.Errorf("exampleValues says %s differs from its default (%s), but the example shows the default", s.key, why)
			}
		}
	}
	for key := range exampleValues {
		if _, ok := values[key]; !ok {
			t.Errorf("exampleValues names %s, which the example does not set", key)
		}
	}
}
