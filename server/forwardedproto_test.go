package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForwardedProtoNotPromised: the gateway reads no X-Forwarded-Proto
// (every URL it writes comes from public_url, and its cookies are Secure
// when public_url is https), so no doc, example or setting help may say a
// proxy's X-Forwarded-Proto is believed or needed. A line saying it is
// not read ("reads no", "never read") may name it.
func TestForwardedProtoNotPromised(t *testing.T) {
	configs, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(configs) == 0 {
		t.Fatalf("no example configs: %v", err)
	}
	files := append(operatorDocs(t), configs...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(strings.ToLower(line), "forwarded-proto") && !strings.Contains(line, "reads no `X-Forwarded-Proto`") && !strings.Contains(line, "never read") {
				t.Errorf("%s:%d mentions X-Forwarded-Proto, which the gateway never reads: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	for _, s := range settings {
		if strings.Contains(strings.ToLower(s.help), "proto") {
			t.Errorf("the help of %s mentions X-Forwarded-Proto: %s", s.key, s.help)
		}
	}
}
