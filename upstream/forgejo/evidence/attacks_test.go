package evidence_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestAttackFiles runs the hand-made entities in testdata/attacks (made from
// a canonical entity whose diff is "diff --git a/f b/f\n+???>\n", so that
// its base64 holds '+' and '/'). Every file there must be listed.
func TestAttackFiles(t *testing.T) {
	const data = `member "data"`
	want := map[string]struct {
		code toolerr.Code // "" means the file is valid
		msg  string
	}{
		"data_escaped_solidus.json":         {toolerr.EvidenceMalformed, "JSON escape inside " + data},
		"data_unicode_escape.json":          {toolerr.EvidenceMalformed, "JSON escape inside " + data},
		"data_escaped_quote.json":           {toolerr.EvidenceMalformed, "JSON escape inside " + data},
		"data_raw_space.json":               {toolerr.EvidenceMalformed, "whitespace inside " + data},
		"data_raw_newline.json":             {toolerr.EvidenceMalformed, "whitespace inside " + data},
		"data_raw_crlf_quantum.json":        {toolerr.EvidenceMalformed, "whitespace inside " + data},
		"data_raw_tab.json":                 {toolerr.EvidenceMalformed, "whitespace inside " + data},
		"data_raw_nul.json":                 {toolerr.EvidenceMalformed, "control character inside " + data},
		"data_non_ascii.json":               {toolerr.EvidenceMalformed, "invalid base64 character inside " + data},
		"data_url_alphabet.json":            {toolerr.EvidenceMalformed, "URL-safe base64 alphabet inside " + data},
		"data_padding_in_middle.json":       {toolerr.EvidenceMalformed, "base64 padding before the end of " + data},
		"data_pad_bits.json":                {toolerr.EvidenceMalformed, "non-zero base64 pad bits"},
		"data_missing_padding.json":         {toolerr.EvidenceMalformed, "non-canonical base64 padding"},
		"data_extra_padding.json":           {toolerr.EvidenceMalformed, "non-canonical base64 padding"},
		"data_triple_pad.json":              {toolerr.EvidenceMalformed, "non-canonical base64 padding"},
		"data_only_padding.json":            {toolerr.EvidenceMalformed, "non-canonical base64 padding"},
		"name_escape_duplicate_data.json":   {toolerr.EvidenceMalformed, `duplicate member "data"`},
		"name_escape_duplicate_nested.json": {toolerr.EvidenceMalformed, `duplicate member "repository.id"`},
		"name_invalid_utf8.json":            {toolerr.EvidenceMalformed, "invalid UTF-8 in a member name"},
		"name_control_character.json":       {toolerr.EvidenceMalformed, "control character in a member name"},
		"name_long_unknown.json":            {toolerr.EvidenceMalformed, `unknown member "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"…`},
		"unknown_member_deep_value.json":    {toolerr.EvidenceMalformed, `unknown member "x"`},
		"bom.json":                          {toolerr.EvidenceMalformed, "entity is not a JSON object"},
		"top_level_array.json":              {toolerr.EvidenceMalformed, "entity is not a JSON object"},
		"top_level_string.json":             {toolerr.EvidenceMalformed, "entity is not a JSON object"},
		"empty.json":                        {toolerr.EvidenceMalformed, "truncated entity"},
		"whitespace_only.json":              {toolerr.EvidenceMalformed, "truncated entity"},
		"comment.json":                      {toolerr.EvidenceMalformed, "expected a member name in the entity"},
		"single_quotes.json":                {toolerr.EvidenceMalformed, "expected a member name in the entity"},
		"trailing_comma.json":               {toolerr.EvidenceMalformed, "expected a member name in the entity"},
		"missing_colon.json":                {toolerr.EvidenceMalformed, "expected ':' after a member name"},
		"missing_comma.json":                {toolerr.EvidenceMalformed, `expected ',' or '}' after member "object_format"`},
		"number_plus.json":                  {toolerr.EvidenceMalformed, `invalid JSON value for member "repository.id"`},
		"number_hex.json":                   {toolerr.EvidenceMalformed, `expected ',' or '}' after member "repository.id"`},
		"number_infinity.json":              {toolerr.EvidenceMalformed, `invalid JSON value for member "pull_request.id"`},
		"concatenated.json":                 {toolerr.EvidenceMalformed, "trailing bytes after the entity"},
		"trailing_nul.json":                 {toolerr.EvidenceMalformed, "trailing bytes after the entity"},
		"valid_crlf_spacing.json":           {},
		"valid_trailing_newline.json":       {},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "attacks", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("%d files in testdata/attacks, %d expectations", len(files), len(want))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatal("no expectation for this file")
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			v, err := evidence.Verify(bytes.NewReader(b), req7(3, 5))
			if w.code == "" {
				diff := []byte("diff --git a/f b/f\n+???>\n")
				wantWindow(t, v, err, diff, req7(3, 5))
				return
			}
			wantRefusal(t, v, err, w.code, w.msg)
		})
	}
}
