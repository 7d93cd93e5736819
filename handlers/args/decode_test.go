package args

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// testArgs exercises every supported member kind and tag.
type testArgs struct {
	Name    string  `json:"name" arg:"required" maxlen:"5" desc:"A short name."`
	Count   int64   `json:"count" arg:"required" min:"1" desc:"A positive count."`
	Delta   *int64  `json:"delta" desc:"Any signed 64-bit integer."`
	Level   *int64  `json:"level" min:"0" max:"10"`
	Flag    *bool   `json:"flag"`
	Strict  bool    `json:"strict" arg:"required"`
	State   *string `json:"state" enum:"open,closed,all"`
	Owner   *string `json:"owner" pattern:"^[a-z]{1,8}$"`
	Ignored string  `json:"-"`
	hidden  string  // not a member: no json tag
}

const base = `"name":"ab","count":1,"strict":false`

func obj(members ...string) string {
	return "{" + strings.Join(append([]string{base}, members...), ",") + "}"
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		check  func(*testing.T, testArgs)
		refuse string // the member named in the refusal, "*" for none; "" to pass
	}{
		{"minimal", obj(), func(t *testing.T, a testArgs) {
			if a.Name != "ab" || a.Count != 1 || a.Strict || a.Delta != nil || a.Flag != nil {
				t.Fatalf("%+v", a)
			}
		}, ""},
		// integers
		{"int as string", `{"name":"ab","count":"1","strict":false}`, nil, "count"},
		{"int as float 1.0", `{"name":"ab","count":1.0,"strict":false}`, nil, "count"},
		{"int as exponent 1e3", `{"name":"ab","count":1e3,"strict":false}`, nil, "count"},
		{"int as exponent 1E0", `{"name":"ab","count":1E0,"strict":false}`, nil, "count"},
		{"int as boolean", `{"name":"ab","count":true,"strict":false}`, nil, "count"},
		{"int as null", `{"name":"ab","count":null,"strict":false}`, nil, "count"},
		{"int as array", `{"name":"ab","count":[1],"strict":false}`, nil, "count"},
		{"positive: zero", `{"name":"ab","count":0,"strict":false}`, nil, "count"},
		{"positive: negative", `{"name":"ab","count":-1,"strict":false}`, nil, "count"},
		{"positive: minus zero", `{"name":"ab","count":-0,"strict":false}`, nil, "count"},
		{"leading zero", `{"name":"ab","count":01,"strict":false}`, nil, "count"},
		{"leading zero where 0 is allowed", obj(`"level":01`), nil, "*"},
		{"leading zero, unbounded", obj(`"delta":007`), nil, "*"},
		{"leading zero, last member", obj(`"delta":00`), nil, "*"},
		{"leading plus", `{"name":"ab","count":+1,"strict":false}`, nil, "count"},
		{"int64 max", `{"name":"ab","count":9223372036854775807,"strict":false}`, func(t *testing.T, a testArgs) {
			if a.Count != math.MaxInt64 {
				t.Fatal(a.Count)
			}
		}, ""},
		{"int64 max + 1", `{"name":"ab","count":9223372036854775808,"strict":false}`, nil, "count"},
		{"huge", `{"name":"ab","count":1` + strings.Repeat("0", 400) + `,"strict":false}`, nil, "count"},
		{"unbounded negative", obj(`"delta":-42`), func(t *testing.T, a testArgs) {
			if *a.Delta != -42 {
				t.Fatal(*a.Delta)
			}
		}, ""},
		{"unbounded zero", obj(`"delta":0`), func(t *testing.T, a testArgs) {
			if a.Delta == nil || *a.Delta != 0 {
				t.Fatal(a.Delta)
			}
		}, ""},
		{"int64 min", obj(`"delta":-9223372036854775808`), func(t *testing.T, a testArgs) {
			if *a.Delta != math.MinInt64 {
				t.Fatal(*a.Delta)
			}
		}, ""},
		{"int64 min - 1", obj(`"delta":-9223372036854775809`), nil, "delta"},
		{"range low", obj(`"level":0`), nil, ""},
		{"range high", obj(`"level":10`), nil, ""},
		{"range over", obj(`"level":11`), nil, "level"},
		{"range under", obj(`"level":-1`), nil, "level"},
		// booleans
		{"bool true", obj(`"flag":true`), func(t *testing.T, a testArgs) {
			if a.Flag == nil || !*a.Flag {
				t.Fatal(a.Flag)
			}
		}, ""},
		{"required bool true", `{"name":"ab","count":1,"strict":true}`, func(t *testing.T, a testArgs) {
			if !a.Strict {
				t.Fatal(a.Strict)
			}
		}, ""},
		{"bool as string", obj(`"flag":"true"`), nil, "flag"},
		{"bool as number", obj(`"flag":1`), nil, "flag"},
		{"bool as null", obj(`"flag":null`), nil, "flag"},
		{"bool capitalised", obj(`"flag":True`), nil, "flag"},
		// strings
		{"string as number", `{"name":12,"count":1,"strict":false}`, nil, "name"},
		{"string as null", `{"name":null,"count":1,"strict":false}`, nil, "name"},
		{"string as object", `{"name":{"a":1},"count":1,"strict":false}`, nil, "name"},
		{"maxlen in code points", `{"name":"ééééé","count":1,"strict":false}`, nil, ""},
		{"maxlen emoji is one", `{"name":"😀😀😀😀😀","count":1,"strict":false}`, nil, ""},
		{"maxlen over", `{"name":"abcdef","count":1,"strict":false}`, nil, "name"},
		{"enum", obj(`"state":"closed"`), nil, ""},
		{"enum miss", obj(`"state":"merged"`), nil, "state"},
		{"enum case", obj(`"state":"Open"`), nil, "state"},
		{"enum empty", obj(`"state":""`), nil, "state"},
		{"pattern", obj(`"owner":"abc"`), nil, ""},
		{"pattern miss", obj(`"owner":"ABC"`), nil, "owner"},
		{"pattern newline", obj(`"owner":"abc\n"`), nil, "owner"},
		{"escapes decoded", `{"name":"a\u00e9\"","count":1,"strict":false}`, func(t *testing.T, a testArgs) {
			if a.Name != `aé"` {
				t.Fatalf("%q", a.Name)
			}
		}, ""},
		// surrogates
		{"lone high surrogate", `{"name":"\ud800","count":1,"strict":false}`, nil, "name"},
		{"lone low surrogate", `{"name":"\udc00","count":1,"strict":false}`, nil, "name"},
		{"high then text", `{"name":"\ud800x","count":1,"strict":false}`, nil, "name"},
		{"high then non-low escape", `{"name":"\ud800\u0041","count":1,"strict":false}`, nil, "name"},
		{"two highs", `{"name":"\ud800\ud800","count":1,"strict":false}`, nil, "name"},
		{"low then high", `{"name":"\udc00\ud800","count":1,"strict":false}`, nil, "name"},
		{"upper-case hex surrogate", `{"name":"\uD800","count":1,"strict":false}`, nil, "name"},
		{"valid pair", `{"name":"\ud83d\ude00","count":1,"strict":false}`, func(t *testing.T, a testArgs) {
			if a.Name != "😀" {
				t.Fatalf("%q", a.Name)
			}
		}, ""},
		{"escaped backslash is not an escape", `{"name":"\\ud80","count":1,"strict":false}`, func(t *testing.T, a testArgs) {
			if a.Name != `\ud80` {
				t.Fatalf("%q", a.Name)
			}
		}, ""},
		{"escaped backslash then lone surrogate", `{"name":"\\\ud800","count":1,"strict":false}`, nil, "name"},
		{"surrogate in an unknown member", obj(`"zzz":"\ud800"`), nil, "zzz"},
		// bytes
		{"invalid UTF-8 in a value", "{\"name\":\"a\xff\",\"count\":1,\"strict\":false}", nil, "*"},
		{"invalid UTF-8 in a key", "{\"name\":\"a\",\"count\":1,\"strict\":false,\"\xc0\":1}", nil, "*"},
		{"overlong encoding", "{\"name\":\"\xc0\xaf\",\"count\":1,\"strict\":false}", nil, "*"},
		{"encoded surrogate bytes", "{\"name\":\"\xed\xa0\x80\",\"count\":1,\"strict\":false}", nil, "*"},
		// structure
		{"duplicate member", obj(`"name":"cd"`), nil, "name"},
		{"duplicate via escape", obj(`"n\u0061me":"cd"`), nil, "name"},
		{"unknown member", obj(`"extra":1`), nil, "extra"},
		{"case variant is unknown", obj(`"Name":"x"`), nil, "Name"},
		{"json:- member is unknown", obj(`"Ignored":"x"`), nil, "Ignored"},
		{"dash member is unknown", obj(`"-":"x"`), nil, "-"},
		{"missing required", `{"name":"ab","strict":true}`, nil, "count"},
		{"null arguments are an empty object", `null`, nil, "name"},
		{"empty arguments", ``, nil, "name"},
		{"array", `[]`, nil, "*"},
		{"string", `"x"`, nil, "*"},
		{"number", `1`, nil, "*"},
		{"trailing object", obj() + ` {}`, nil, "*"},
		{"trailing garbage", obj() + `x`, nil, "*"},
		{"trailing brace", obj() + `}`, nil, "*"},
		{"trailing whitespace", obj() + " \n\t", nil, ""},
		{"leading whitespace", " \n" + obj(), nil, ""},
		{"trailing comma", `{"name":"ab","count":1,"strict":false,}`, nil, "*"},
		{"truncated", `{"name":"ab","count":1`, nil, "*"},
		{"non-string key", `{1:2}`, nil, "*"},
		{"missing colon", `{"name" "ab"}`, nil, "name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode[testArgs](json.RawMessage(tc.raw))
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.check != nil {
					tc.check(t, got)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			te, ok := err.(*toolerr.Error)
			if !ok || te.Code != toolerr.InvalidArguments {
				t.Fatalf("err = %#v, want invalid_arguments", err)
			}
			member, _ := te.Details["argument"].(string)
			if tc.refuse == "*" {
				tc.refuse = ""
			}
			if member != tc.refuse {
				t.Fatalf("refusal names %q, want %q (%s)", member, tc.refuse, te.Message)
			}
		})
	}
}

func TestSpecPanicsOnBadTags(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"not a struct", func() { _, _ = Decode[int](nil) }},
		{"unsupported type", func() {
			_, _ = Decode[struct {
				X float64 `json:"x" arg:"required"`
			}](nil)
		}},
		{"required pointer", func() {
			_, _ = Decode[struct {
				X *int64 `json:"x" arg:"required"`
			}](nil)
		}},
		{"optional plain field", func() {
			_, _ = Decode[struct {
				X int64 `json:"x"`
			}](nil)
		}},
		{"bad integer tag", func() {
			_, _ = Decode[struct {
				X int64 `json:"x" arg:"required" min:"one"`
			}](nil)
		}},
		{"exported field without a json tag", func() {
			_, _ = Decode[struct {
				X string `json:"x" arg:"required"`
				Y *string
			}](nil)
		}},
		{"exported field without a json tag, schema first", func() {
			_ = Schema[struct {
				Owner string `arg:"required"`
			}]()
		}},
		{"bad pattern", func() {
			_, _ = Decode[struct {
				X string `json:"x" arg:"required" pattern:"("`
			}](nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

// FuzzDecode: Decode never panics, and what it accepts survives a round
// trip through encoding/json unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{obj(), obj(`"delta":-1`, `"state":"open"`, `"flag":true`), `{"name":"\ud83d\ude00","count":9223372036854775807,"strict":true}`, `[]`, `{"name":"\ud800"}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{ "name" : "x" , "count":1 ,"strict":false}`))
	f.Add([]byte(`{"n\u0061me":"x","name":"y"}`))
	f.Add([]byte(`{"name":{"a":[1,"}"]}}`))
	f.Add([]byte(`{"count":1}{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		// The same members lent by embedded structs decode alike.
		sameAsFlat(t, raw)
		got, err := Decode[testArgs](raw)
		// The one-pass reading of a valid object must agree with the
		// token walk, member by member and refusal by refusal.
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && utf8.Valid(trimmed) && string(trimmed) != "null" {
			var walked testArgs
			werr := walkTokens(trimmed, specFor(reflect.TypeOf(walked)), reflect.ValueOf(&walked).Elem())
			if fmt.Sprint(err) != fmt.Sprint(werr) || err == nil && !reflect.DeepEqual(got, walked) {
				t.Fatalf("%q: one pass %+v, %v; token walk %+v, %v", raw, got, err, walked, werr)
			}
		}
		if err != nil {
			return
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		// Marshal writes null for absent optional members, which Decode
		// refuses; drop them before decoding again.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(again))
		dec.UseNumber()
		_ = dec.Decode(&m)
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
		delete(m, "Ignored")
		again, _ = json.Marshal(m)
		back, err := Decode[testArgs](again)
		if err != nil {
			t.Fatalf("accepted %q, refused its re-encoding %s: %v", raw, again, err)
		}
		back.Ignored, back.hidden = got.Ignored, got.hidden
		b1, _ := json.Marshal(got)
		b2, _ := json.Marshal(back)
		if string(b1) != string(b2) {
			t.Fatalf("round trip changed %s to %s", b1, b2)
		}
	})
}

// BenchmarkDecode: a tool call's arguments read in one pass (Decode) and by
// the token walk it replaced (walkTokens), for docs/performance.md.
//
//	go test ./handlers/args/ -run '^$' -bench BenchmarkDecode -benchmem
func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"name":"octo","count":42,"delta":-7,"strict":true}`)
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode[testArgs](raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("token-walk", func(b *testing.B) {
		b.ReportAllocs()
		s := specFor(reflect.TypeOf(testArgs{}))
		for b.Loop() {
			var out testArgs
			if err := walkTokens(raw, s, reflect.ValueOf(&out).Elem()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSpecSkipsDeclaredAndUnexported: json:"-" and unexported fields stay
// out of the arguments without a panic, and a member for them is unknown.
func TestSpecSkipsDeclaredAndUnexported(t *testing.T) {
	type withSkips struct {
		Owner string `json:"owner" arg:"required"`
		Cache string `json:"-"`
		note  string
	}
	got, err := Decode[withSkips](json.RawMessage(`{"owner":"team"}`))
	if err != nil || got.Owner != "team" || got.Cache != "" || got.note != "" {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	if _, err := Decode[withSkips](json.RawMessage(`{"owner":"team","Cache":"x"}`)); err == nil {
		t.Fatal("a member for a json:\"-\" field is accepted")
	}
}
