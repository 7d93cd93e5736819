package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestRefusedAnswerFollowsTheCodeTable: the answer written to a refused
// connection, before any HTTP server runs, is the overloaded refusal that
// toolerr's table describes: its status, its body, a true length.
func TestRefusedAnswerFollowsTheCodeTable(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(refusedAnswer)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != toolerr.Overloaded.HTTPStatus() || body.Error.Code != string(toolerr.Overloaded) || body.Error.Message == "" {
		t.Fatalf("HTTP %d %+v, want %d %s", resp.StatusCode, body, toolerr.Overloaded.HTTPStatus(), toolerr.Overloaded)
	}
	if resp.ContentLength != int64(len(refusedAnswer)-strings.Index(refusedAnswer, "\r\n\r\n")-4) || resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Fatalf("framing: length %d, headers %v, close %v", resp.ContentLength, resp.Header, resp.Close)
	}
}
