package forgejo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
)

// grantSeedScenario captures one native answer from the Core emulator: it
// may switch a grant fault on, then makes one request and returns the body.
type grantSeedScenario struct {
	name  string
	fault *forgejoemu.GrantFault
	op    forgejoemu.GrantOp
	// request is method and path relative to /api/v1, with %d for the grant ID
	// and %s for the request key.
	method, path string
}

// mutateGrant returns a GrantFaultMutate that applies fn to the grant
// object of an answer (the answer itself, or its "grant" member).
func mutateGrant(fn func(g map[string]any)) *forgejoemu.GrantFault {
	return &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: func(body any) any {
		m, _ := body.(map[string]any)
		if g, ok := m["grant"].(map[string]any); ok {
			fn(g)
		} else if m != nil {
			fn(m)
		}
		return body
	}}
}

func nest(v any, depth int) any {
	for range depth {
		v = []any{v}
	}
	return v
}

var grantSeedScenarios = []grantSeedScenario{
	{name: "emu-grant", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d"},
	{name: "emu-list", op: forgejoemu.GrantOpList, method: "GET", path: "/agent-work-grants?limit=30&page=1&state=all"},
	{name: "emu-confirm", op: forgejoemu.GrantOpConfirm, method: "POST", path: "/repos/demo/gateway/agent-work-grants/%d/confirm"},
	{name: "emu-submit", op: forgejoemu.GrantOpSubmit, method: "POST", path: "/repos/demo/gateway/agent-work-grants/%d/issues"},
	{name: "emu-submission", op: forgejoemu.GrantOpGetSubmission, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d/submissions/%s"},
	{name: "emu-fault-malformed", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMalformed}},
	{name: "emu-fault-submission-malformed", op: forgejoemu.GrantOpGetSubmission, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d/submissions/%s",
		fault: &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMalformed}},
	{name: "emu-fault-id-string", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["id"] = fmt.Sprint(g["id"]) })},
	{name: "emu-fault-id-exponent", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["id"] = json.Number("1e3") })},
	{name: "emu-fault-id-huge", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["id"] = json.Number("99999999999999999999999999999999") })},
	{name: "emu-fault-revision-float", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["state_revision"] = json.Number("1.5") })},
	{name: "emu-fault-state-unknown", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["state"] = "approved_by_agent" })},
	{name: "emu-fault-nul-task", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["proposal"].(map[string]any)["task"] = "task\x00with NUL" })},
	{name: "emu-fault-deep", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { g["extra"] = nest("x", 40) })},
	{name: "emu-fault-no-repository", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) { delete(g, "repository") })},
	{name: "emu-fault-digest-upper", op: forgejoemu.GrantOpGet, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d",
		fault: mutateGrant(func(g map[string]any) {
			p := g["proposal"].(map[string]any)
			p["digest"] = strings.ToUpper(p["digest"].(string))
		})},
	{name: "emu-fault-receipt-actor", op: forgejoemu.GrantOpGetSubmission, method: "GET", path: "/repos/demo/gateway/agent-work-grants/%d/submissions/%s",
		fault: &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: func(body any) any {
			body.(map[string]any)["submission"].(map[string]any)["actor"] = map[string]any{"id": 1, "login": "demo"}
			return body
		}}},
}

// hostileGrantVariants derive byte-level attacks from a genuine grant
// answer: what a JSON encoder never produces, so no fault switch can.
func hostileGrantVariants(grant []byte) map[string][]byte {
	g := string(bytes.TrimSpace(grant))
	inner := g[1:]
	return map[string][]byte{
		"hostile-duplicate-id":      []byte(`{"id":1,` + inner),
		"hostile-case-folded-id":    []byte(`{"ID":1,` + inner),
		"hostile-escaped-duplicate": []byte(`{"\u0069d":1,` + inner),
		"hostile-lone-surrogate":    []byte(strings.Replace(g, `"task":"`, `"task":"\ud800`, 1)),
		"hostile-raw-nul":           []byte(strings.Replace(g, `"task":"`, "\"task\":\"\x00", 1)),
		"hostile-invalid-utf8":      []byte(strings.Replace(g, `"task":"`, "\"task\":\"\xff", 1)),
		"hostile-trailing":          []byte(g + `{}`),
		"hostile-bom":               append([]byte("\xef\xbb\xbf"), grant...),
		"hostile-nesting-10000":     []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)),
		"hostile-huge-number":       []byte(strings.Replace(g, `"state_revision":`, `"state_revision":1`+strings.Repeat("0", 400)+`,"x":`, 1)),
		"hostile-number-1e999":      []byte(`{"id":1e999}`),
	}
}

// TestFuzzSeedsFromEmulator keeps the corpora of FuzzGrantJSON and
// FuzzLinkHeader: native answers captured from the Core emulator under its
// grant fault switches, Link and X-Total-Count headers of its paginated
// grant list, and byte-level attacks on a genuine answer. Run with
// UPDATE_FUZZ_SEEDS=1 to capture them again (it needs git).
func TestFuzzSeedsFromEmulator(t *testing.T) {
	grantSeeds := map[string][]byte{}
	linkSeeds := map[string][]any{}
	if fuzzseed.Updating() {
		grantSeeds, linkSeeds = captureFromEmulator(t)
	} else {
		for _, sc := range grantSeedScenarios {
			grantSeeds[sc.name] = nil
		}
		for name := range hostileGrantVariants([]byte("{}")) {
			grantSeeds[name] = nil
		}
		for _, name := range linkSeedNames {
			linkSeeds[name] = nil
		}
	}
	var gs, ls []fuzzseed.Seed
	for name, body := range grantSeeds {
		gs = append(gs, fuzzseed.Seed{Name: name, Values: []any{body}, Live: true})
	}
	for name, v := range linkSeeds {
		ls = append(ls, fuzzseed.Seed{Name: name, Values: v, Live: true})
	}
	fuzzseed.Sync(t, "FuzzGrantJSON", gs)
	fuzzseed.Sync(t, "FuzzLinkHeader", ls)
}

var linkSeedNames = []string{"emu-page-1", "emu-page-2", "emu-page-3", "emu-page-past-end",
	"hostile-last-int64-page", "hostile-unterminated", "hostile-many-links", "hostile-total-overflow"}

func captureFromEmulator(t *testing.T) (map[string][]byte, map[string][]any) {
	t.Helper()
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	demo, err := emu.SeedDemo()
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 5 {
		g, err := emu.PrepareGrant(demo.Owner, demo.PublicRepo, demo.Bot, demo.Owner, forgejoemu.GrantProposal{Task: "task " + strconv.Itoa(i), Summary: "summary"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g.ID)
	}
	g, _ := emu.Grant(ids[0])
	key := "0f8fad5b-d9cb-469f-a165-70867728950e"
	do := func(method, path string, body any) (*http.Response, []byte) {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, emu.URL()+"/api/v1"+path, r)
		req.Header.Set("Authorization", "token "+demo.BotToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	triple := map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 1, "proposal_digest": g.Digest}
	submit := map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 1, "proposal_digest": g.Digest,
		"request_key": key, "title": "Title", "body": "Body"}
	grants := map[string][]byte{}
	for _, sc := range grantSeedScenarios {
		if sc.fault != nil {
			emu.SetGrantFault(sc.op, *sc.fault)
		}
		path := sc.path
		if strings.Contains(path, "%d") {
			if strings.Contains(path, "%s") {
				path = fmt.Sprintf(path, g.ID, key)
			} else {
				path = fmt.Sprintf(path, g.ID)
			}
		}
		var body any
		switch sc.op {
		case forgejoemu.GrantOpConfirm:
			body = triple
		case forgejoemu.GrantOpSubmit:
			body = submit
		}
		_, b := do(sc.method, path, body)
		emu.ClearGrantFaults()
		grants[sc.name] = b
		if sc.op == forgejoemu.GrantOpConfirm && sc.fault == nil {
			if err := emu.ApproveGrant(g.ID, demo.Owner); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range hostileGrantVariants(grants["emu-grant"]) {
		grants[name] = b
	}
	links := map[string][]any{}
	emu.SetGrantPageClamp(2)
	for i, page := range []int64{1, 2, 3, 9} {
		resp, b := do("GET", "/agent-work-grants?limit=30&state=all&page="+strconv.FormatInt(page, 10), nil)
		var items []json.RawMessage
		_ = json.Unmarshal(b, &items)
		name := linkSeedNames[i]
		links[name] = []any{strings.Join(resp.Header.Values("Link"), "\n"), resp.Header.Get("X-Total-Count"), page, uint8(len(items))}
	}
	next := `<` + emu.URL() + `/api/v1/agent-work-grants?page=2>; rel="next"`
	links["hostile-last-int64-page"] = []any{next, "9223372036854775807", int64(math.MaxInt64), uint8(30)}
	links["hostile-unterminated"] = []any{`<` + emu.URL() + `/x?page=2; rel="next", "<`, "31", int64(1), uint8(30)}
	links["hostile-many-links"] = []any{strings.Repeat(next+", ", 1000) + next, "", int64(1), uint8(30)}
	links["hostile-total-overflow"] = []any{"", "99999999999999999999", int64(math.MaxInt64 / 10), uint8(30)}
	return grants, links
}
