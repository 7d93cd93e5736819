package diffread_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// TestDecodePage: a page decodes only when every JSON reader reads the same
// values from its text as the reader does — exact member names, none
// repeated or in another case, none unknown, each of its type, numbers
// plain integers within 2^53-1 — and then a plain map decoding (what jq or
// Python do) agrees with it.
func TestDecodePage(t *testing.T) {
	o := serverOptions(testDiff())
	honest, _ := json.Marshal(diffreadtest.NewServedPage(o, 100))
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal(honest, &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	// replace forges the text itself, for what a map cannot hold.
	replace := func(old, new string) string {
		if !strings.Contains(string(honest), old) {
			t.Fatalf("the honest page has no %s", old)
		}
		return strings.Replace(string(honest), old, new, 1)
	}
	fake := `{"byte_count":1,"encoding":"base64","media_type":"text/x-diff","sha256":"` + strings.Repeat("0", 64) + `"}`
	p, err := diffread.DecodePage(honest)
	if err != nil || p.Text != nil || p.NextCursor == nil {
		t.Fatalf("honest page: %+v, %v", p, err)
	}
	if got := plainContentSHA256(t, p.Manifest); got != o.Diff.SHA256 {
		t.Fatalf("a plain reading of the manifest finds content.sha256 %q, want %q", got, o.Diff.SHA256)
	}
	for _, c := range []struct{ name, text, says string }{
		{"not JSON", "{", "not valid JSON"},
		{"trailing bytes", string(honest) + "x", "not valid JSON"},
		{"an array", "[]", "the page is not a JSON object"},
		{"not UTF-8", replace(`"contract":"observed_input_range"`, "\"contract\":\"observed_input_range\xff\""), "not valid UTF-8"},
		{"a lone surrogate", replace(`"contract":"observed_input_range"`, `"contract":"observed_input_range\ud800"`), "lone UTF-16 surrogate"},
		{"Content beside content, read last", replace(`"content":{`, `"content":`+fake+`,"Content":{`), `"Content" repeats another in a different letter case`},
		{"Content beside content, read first", replace(`"content":{`, `"Content":`+fake+`,"content":{`), `"content" repeats another`},
		{"content twice", replace(`"content":{`, `"content":`+fake+`,"content":{`), `member "content" appears twice`},
		{"content twice, once escaped", replace(`"content":{`, `"content":`+fake+`,"\u0063ontent":{`), `member "content" appears twice`},
		{"sha256 in another case beside it", replace(`"sha256":"`, `"SHA256":"`+strings.Repeat("0", 64)+`","sha256":"`), `"sha256" repeats another`},
		{"eof in another case beside it", replace(`"eof":false`, `"EOF":true,"eof":false`), `"eof" repeats another`},
		{"eof only in another case", replace(`"eof":false`, `"Eof":false`), `the page has an unknown member "Eof"`},
		{"Content only", replace(`"content":{`, `"Content":{`), `manifest has an unknown member "Content"`},
		{"an unknown member of the page", replace(`{"requested"`, `{"extra":1,"requested"`), `the page has an unknown member "extra"`},
		{"an unknown member of requested", replace(`"requested":{`, `"requested":{"extra":1,`), `requested has an unknown member "extra"`},
		{"an unknown member deep in the manifest", replace(`"target_tip":{`, `"target_tip":{"extra":1,`), `manifest.observations.target_tip has an unknown member "extra"`},
		{"nesting deeper than a page", replace(`{"requested"`, `{"extra":[[[[[[[[1]]]]]]]],"requested"`), "nested deeper than 8 levels"},
		{"no data", edit(func(m map[string]any) { delete(m, "data") }), `the page has no member "data"`},
		{"no text member", edit(func(m map[string]any) { delete(m, "text") }), `the page has no member "text"`},
		{"no next_cursor member", edit(func(m map[string]any) { delete(m, "next_cursor") }), `no member "next_cursor"`},
		{"null eof", edit(func(m map[string]any) { m["eof"] = nil }), "eof must be a boolean"},
		{"null manifest", edit(func(m map[string]any) { m["manifest"] = nil }), "manifest is not a JSON object"},
		{"a number for text", edit(func(m map[string]any) { m["text"] = 1 }), "text must be a string or null"},
		{"a string offset", edit(func(m map[string]any) { m["byte_offset"] = "100" }), "byte_offset must be an integer"},
		{"a fractional chunk_bytes", edit(func(m map[string]any) { m["chunk_bytes"] = 1.5 }), "chunk_bytes must be an integer"},
		{"an offset with an exponent", replace(`"byte_offset":100`, `"byte_offset":1e2`), "byte_offset must be an integer"},
		{"an offset with a fraction", replace(`"byte_offset":100`, `"byte_offset":100.0`), "byte_offset must be an integer"},
		{"an offset with a leading zero", replace(`"byte_offset":100`, `"byte_offset":0100`), "not valid JSON"},
		{"a negative chunk_bytes", replace(`"chunk_bytes":100`, `"chunk_bytes":-100`), "chunk_bytes must be an integer"},
		{"an index beyond 2^53-1", replace(`"index":7`, `"index":9007199254740993`), "requested.index must be an integer from 0 to 2^53-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := diffread.DecodePage([]byte(c.text))
			if err == nil {
				t.Fatalf("decoded %+v", p)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("refused with %q; want it to say %q", err, c.says)
			}
		})
	}
	if p, err := diffread.DecodePage([]byte(replace(`"index":7`, `"index":9007199254740991`))); err != nil || p.Requested.Index != 1<<53-1 {
		t.Fatalf("an index of 2^53-1: %+v, %v", p, err)
	}
}

// plainContentSHA256 reads manifest.content.sha256 as jq or Python would:
// exact member names, the last of a repeated one.
func plainContentSHA256(t testing.TB, manifest []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("the manifest: %v", err)
	}
	content, _ := m["content"].(map[string]any)
	sum, _ := content["sha256"].(string)
	return sum
}

// TestReadRefusesMisreadableManifests: a forged text whose manifest one
// JSON reader would read another content.sha256 from than another does
// (encoding/json folds case and keeps the last of repeated members) is
// refused on the page it came with, before a byte of it is written; the
// honest diff's manifest, read plainly, carries the sha256 verified.
func TestReadRefusesMisreadableManifests(t *testing.T) {
	diff := testDiff()
	honestContent := `"content":{"byte_count":300,"encoding":"base64","media_type":"text/x-diff","sha256":"` + serverOptions(diff).Diff.SHA256 + `"}`
	fake := `"content":{"byte_count":300,"encoding":"base64","media_type":"text/x-diff","sha256":"` + strings.Repeat("0", 64) + `"}`
	for _, c := range []struct {
		name    string
		rewrite func(string) string
	}{
		{"Content after content", func(s string) string {
			return strings.Replace(s, honestContent, fake+","+strings.Replace(honestContent, "content", "Content", 1), 1)
		}},
		{"content twice, the real one last", func(s string) string { return strings.Replace(s, honestContent, fake+","+honestContent, 1) }},
		{"SHA256 after sha256", func(s string) string {
			return strings.Replace(s, honestContent, strings.Replace(fake, `}`, `,"SHA256":"`+serverOptions(diff).Diff.SHA256+`"}`, 1), 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := serverOptions(diff)
			o.Rewrite = func(n int, text string) string {
				if !strings.Contains(text, honestContent) {
					t.Errorf("page %d has no %s", n, honestContent)
				}
				return c.rewrite(text)
			}
			s := diffreadtest.Start(t, o)
			var w bytes.Buffer
			res, err := read(t, s.URL, "", &w)
			var be *diffread.BoundError
			if res != nil || !errors.As(err, &be) || be.Bound != diffread.BoundStrict || be.Page != 1 || w.Len() != 0 {
				t.Fatalf("got %+v, %v, %d bytes written", res, err, w.Len())
			}
			t.Log(err)
		})
	}
	s := diffreadtest.Start(t, serverOptions(diff))
	var w bytes.Buffer
	res, err := read(t, s.URL, "", &w)
	if err != nil || plainContentSHA256(t, res.Manifest.Raw) != res.SHA256 || !bytes.Equal(w.Bytes(), diff) {
		t.Fatalf("honest: %+v, %v", res, err)
	}
}

// TestVerifierAcceptsGatewayManifests: the manifest the gateway's own
// evidence verifier writes passes the reader's closed shape, whatever the
// observations (a null target tip, a deleted fork).
func TestVerifierAcceptsGatewayManifests(t *testing.T) {
	diff := testDiff()
	deleted := et.Sample()
	deleted.TargetOID, deleted.ForkRepositoryID = "", 0 // written as null
	for _, c := range []struct {
		name   string
		entity et.Entity
		opts   []et.Option
	}{
		{"a sample entity", et.Sample(), nil},
		{"a missing target tip and a deleted fork", deleted, nil},
		{"members in another order, data first", et.Sample(), []et.Option{et.DataFirst(), et.Spaced()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := c.entity.WithDiff(diff)
			v, err := evidence.Verify(bytes.NewReader(et.Bytes(e, diff, c.opts...)), evidence.Request{Index: e.Index, Window: 300})
			if err != nil {
				t.Fatal(err)
			}
			tg := diffread.Target{Owner: v.Identity.Owner, Repo: v.Identity.Name, Index: v.Identity.Index}
			o := diffreadtest.Options{Owner: tg.Owner, Repo: tg.Repo, Index: tg.Index, Diff: diffreadtest.Bytes(diff), Window: 300}
			page, _ := json.Marshal(diffreadtest.NewServedPage(o, 0))
			var m map[string]json.RawMessage
			json.Unmarshal(page, &m)
			m["manifest"] = v.Manifest
			page, _ = json.Marshal(m)
			p, err := diffread.DecodePage(page)
			if err != nil {
				t.Fatalf("the gateway's manifest %s: %v", v.Manifest, err)
			}
			var w bytes.Buffer
			vr := diffread.NewVerifier(tg, &w)
			if err := vr.Add(p); err != nil {
				t.Fatal(err)
			}
			if _, err := vr.Finish(); err != nil || !bytes.Equal(w.Bytes(), diff) {
				t.Fatalf("%v, %d bytes", err, w.Len())
			}
		})
	}
}
