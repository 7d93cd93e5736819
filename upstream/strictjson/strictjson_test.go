package strictjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var lower = Options{MaxDepth: 4, Fold: strings.ToLower, FoldASCII: ASCIITable(ASCIILower), FloatRange: true}

func TestCheck(t *testing.T) {
	cases := []struct {
		doc  string
		want Problem
		name string
	}{
		{`{"id":1,"name":"x"}`, OK, ""},
		{`{"id":1,"id":2}`, Repeated, "id"},
		{`{"id":1,"\u0069d":2}`, Repeated, "id"},
		{`{"id":1,"ID":2}`, RepeatedFolded, "ID"},
		{`{"é":1,"\u00c9":2}`, RepeatedFolded, "É"},
		{`{"a":{"b":1},"a":2}`, Repeated, "a"},
		{`{"a":{"a":1},"b":{"a":2}}`, OK, ""},
		{`[{"a":1},{"a":2}]`, OK, ""},
		{`{"a":["a","a"],"b":"a"}`, OK, ""},
		{`{"a":"{\"a\":1,\"a\":2}","b":"x,\"y"}`, OK, ""},
		{`{"a\"":1,"a\\":2,"a":3}`, OK, ""},
		{`{"a":"\\","a":1}`, Repeated, "a"},
		{`[[[[]]]]`, OK, ""},
		{`[[[[[]]]]]`, TooDeep, ""},
		{`{"a":{"b":{"c":{"d":1}}}}`, OK, ""},
		{`{"a":{"b":{"c":{"d":{}}}}}`, TooDeep, ""},
		{`{"n":1e999}`, NumberRange, ""},
		{`{"n":-1e999}`, NumberRange, ""},
		{`{"n":1e-999,"m":-0.5E+3,"o":123456789012345678901234567890}`, OK, ""},
		{`"just a string"`, OK, ""},
		{`12`, OK, ""},
	}
	for _, tc := range cases {
		p, name := Check([]byte(tc.doc), &lower)
		if p != tc.want || name != tc.name {
			t.Errorf("Check(%s) = %v %q, want %v %q", tc.doc, p, name, tc.want, tc.name)
		}
		// Every name colliding: the spill sets alone must find the same.
		p, name = colliding().check([]byte(tc.doc), &lower)
		if p != tc.want || name != tc.name {
			t.Errorf("with every hash colliding, Check(%s) = %v %q, want %v %q", tc.doc, p, name, tc.want, tc.name)
		}
	}
	noRange := lower
	noRange.FloatRange = false
	if p, _ := Check([]byte(`[1e999]`), &noRange); p != OK {
		t.Errorf("FloatRange off still refuses a large number: %v", p)
	}
}

// The name sets are reused across objects at one depth and never leak
// from one object into its sibling or its parent.
func TestCheckSetsPerObject(t *testing.T) {
	doc := `{"x":[{"a":1,"b":2},{"a":3,"b":4}],"y":{"x":1,"a":2},"a":{"a":{"a":1}}}`
	if p, name := Check([]byte(doc), &lower); p != OK {
		t.Fatalf("%v %q", p, name)
	}
}

// StringEnd finds the closing quote past any escaped quote and after any
// run of escaped backslashes.
func TestStringEnd(t *testing.T) {
	for _, lit := range []string{`""`, `"abc"`, `"a\"b"`, `"a\\"`, `"a\\\"b"`, `"\\\\"`, `"\"\""`, `"é\u0022"`} {
		doc := lit + `,"x"`
		if end := StringEnd([]byte(doc), 0); end != len(lit)-1 {
			t.Errorf("StringEnd(%s) = %d, want %d", doc, end, len(lit)-1)
		}
	}
	// Unchecked text (the GitHub client's scan): no closing quote is -1.
	for _, doc := range []string{`"`, `"abc`, `"abc\"`, `"\\\"`} {
		if end := StringEnd([]byte(doc), 0); end != -1 {
			t.Errorf("StringEnd(%s) = %d, want -1", doc, end)
		}
	}
}

// colliding is a checker whose names all hash alike, so that every name
// after an object's first is told apart only by its spill set.
func colliding() *checker {
	return &checker{hash: func([]byte) uint64 { return 0 }}
}

// A checker reused from the pool allocates nothing for an answer of the
// usual shape: the cost the hashed name sets exist to remove.
func TestCheckAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector mean nothing")
	}
	doc := []byte(repositoryAnswer)
	Check(doc, &lower32)
	if n := testing.AllocsPerRun(100, func() { Check(doc, &lower32) }); n != 0 {
		t.Errorf("Check allocated %v times a call", n)
	}
}

// FuzzCheckCollisions holds the hashed name sets to the spill sets alone
// (every hash colliding), which key names by their folded text: for any
// text json.Valid accepts, both find the same problem and name.
func FuzzCheckCollisions(f *testing.F) {
	for _, seed := range []string{repositoryAnswer, `{"a":1,"A":2}`, `{"é":{"É":1,"x":[{"y":1,"Y":2}]}}`, `{"a\u0041":1,"aa":2}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		if len(doc) > 1 && doc[0] == '"' && doc[len(doc)-1] == '"' {
			if end := StringEnd(doc, 0); end != len(doc)-1 {
				t.Fatalf("%s: the string ends at %d, StringEnd says %d", doc, len(doc)-1, end)
			}
		}
		p, name := Check(doc, &lower)
		cp, cname := colliding().check(doc, &lower)
		if p != cp || name != cname {
			t.Fatalf("%s: hashed %v %q, colliding %v %q", doc, p, name, cp, cname)
		}
	})
}

// repositoryAnswer is a repository answer of the Core emulator's shape.
const repositoryAnswer = `{"id":7,"owner":{"id":3,"login":"demo","full_name":"Demo"},"name":"public","full_name":"demo/public","description":"A \"demo\" — with escapes\n","empty":false,"private":false,"size":42,"html_url":"http://x/demo/public","default_branch":"main","created_at":"2026-11-29T00:00:00Z","permissions":{"admin":false,"push":false,"pull":true},"topics":["a","b"]}`

var lower32 = func() Options { o := lower; o.MaxDepth = 32; return o }()

// BenchmarkCheck reads a repository answer of the Core emulator's shape.
func BenchmarkCheck(b *testing.B) {
	doc := []byte(repositoryAnswer)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if p, _ := Check(doc, &lower32); p != OK {
			b.Fatal(p)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for text, lone := range map[string]bool{
		`"plain"`:                false,
		`"\u00e9\u20ac"`:         false,
		`"\ud83d\ude00"`:         false, // a valid pair
		`"\uD83D\uDE00"`:         false,
		`"\ud83d"`:               true,
		`"\ud83dx"`:              true,
		`"\ud83d\u0041"`:         true,
		`"\ude00"`:               true,
		`"\ude00\ud83d"`:         true,
		`"\\ud83d"`:              false, // an escaped backslash, then text
		`"\\\ud83d"`:             true,
		`{"\ud800":1}`:           true,
		`"\ud83d\ude00\udc00"`:   true,
		`"\u12"`:                 true, // too short to read: refused, never passed
		`["a\"\ud83d\ude00", 1]`: false,
	} {
		if got := LoneSurrogate([]byte(text)); got != lone {
			t.Errorf("LoneSurrogate(%s) = %v, want %v", text, got, lone)
		}
	}
}

// Members gives each member's unescaped name and exact value text, in
// order, and stops when told to.
func TestMembers(t *testing.T) {
	doc := []byte(` { "a" : [1, {"x":"]"}] , "b\u0022":"x\"y" ,"c":-1.5e3, "d":{"e":{}},"f":null}`)
	var got []string
	Members(bytes.TrimSpace(doc), func(name string, value json.RawMessage) bool {
		got = append(got, name+"="+string(value))
		return true
	})
	want := []string{`a=[1, {"x":"]"}]`, `b"="x\"y"`, `c=-1.5e3`, `d={"e":{}}`, `f=null`}
	if !slices.Equal(got, want) {
		t.Errorf("Members read %q, want %q", got, want)
	}
	n := 0
	Members([]byte(`{"a":1,"b":2,"c":3}`), func(string, json.RawMessage) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Members went on after false: %d calls", n)
	}
	Members([]byte(`{}`), func(name string, _ json.RawMessage) bool { t.Errorf("member %q in {}", name); return true })
}

// A checker goes back to the pool without the buffers of a huge name or
// the set of a huge object, and with those of ordinary ones.
func TestCheckerReleaseBounds(t *testing.T) {
	huge := `{"` + strings.Repeat("n", maxPooledName+1) + `":1,"a":{"b":2}}`
	var many strings.Builder
	many.WriteString(`{`)
	for i := range maxPooledNames + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"m` + strconv.Itoa(i) + `":1`)
	}
	many.WriteString(`}`)
	for _, tc := range []struct {
		doc        string
		keepsNames bool
		keepsSet   bool
	}{
		{repositoryAnswer, true, true},
		{huge, false, true},
		{many.String(), true, false},
	} {
		c := &checker{hash: nameHash}
		if p, _ := c.check([]byte(tc.doc), &lower32); p != OK {
			t.Fatal(p)
		}
		c.release()
		if kept := c.fold != nil; kept != tc.keepsNames {
			t.Errorf("%.40s: name buffers kept %v, want %v", tc.doc, kept, tc.keepsNames)
		}
		if kept := c.sets[0] != nil; kept != tc.keepsSet {
			t.Errorf("%.40s: top-level name set kept %v, want %v", tc.doc, kept, tc.keepsSet)
		}
	}
}
