package toolset

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
)

// TestTextString pins the owned path's text escaping (jsonwire.AppendString,
// held to encoding/json in its own package) to the SDK's TextContent
// encoding on the texts the differential tests send.
func TestTextString(t *testing.T) {
	for name, text := range diffFixtures {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(text); err != nil {
			t.Fatal(err)
		}
		if got := jsonwire.AppendString(nil, text); !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("%s: %.200q, want %.200q", name, got, want.Bytes())
		}
	}
}
