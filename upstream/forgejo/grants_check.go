package forgejo

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
)

// maxNativeDepth bounds the nesting of a native grant answer; real ones
// nest three levels.
const maxNativeDepth = 32

var (
	positiveIntRe = regexp.MustCompile(`^[1-9][0-9]*$`)
	digestRe      = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkNativeJSON refuses a native answer that a caller and the gateway
// could read differently, or whose text is not whole: invalid UTF-8, lone
// UTF-16 surrogate escapes (which decoders replace), invalid JSON, trailing
// bytes, a member repeated (or repeated with other letter case) in one
// object, nesting over maxNativeDepth, or a number beyond float64's range.
// The answer is then passed on as it came, so these checks are what makes
// that safe.
func checkNativeJSON(body []byte) error {
	if !utf8.Valid(body) {
		return errNotUTF8
	}
	if !json.Valid(body) {
		return errNotJSON
	}
	return checkValidJSON(body)
}

// decodeNativeJSON decodes body into dst with the refusals of
// checkNativeJSON, in the same order, but reads the text once less:
// json.Unmarshal checks the syntax before it decodes anything, so a
// separate json.Valid pass is not needed. A refusal is StageCheck and
// a body that is strict but does not fit dst StageDecode, as when the
// exchange checked and getJSON decoded.
func decodeNativeJSON(body []byte, dst any) (upstream.Stage, error) {
	if !utf8.Valid(body) {
		return upstream.StageCheck, errNotUTF8
	}
	err := json.Unmarshal(body, dst)
	if _, syntax := err.(*json.SyntaxError); syntax {
		return upstream.StageCheck, errNotJSON
	}
	if err := checkValidJSON(body); err != nil {
		return upstream.StageCheck, err
	}
	if err != nil {
		return upstream.StageDecode, err
	}
	return 0, nil
}

var (
	errNotUTF8 = errors.New("the answer is not valid UTF-8")
	errNotJSON = errors.New("the answer is not valid JSON")
)

// checkValidJSON is checkNativeJSON's refusals of valid UTF-8 JSON text.
func checkValidJSON(body []byte) error {
	if strictjson.LoneSurrogate(body) {
		return errors.New("the answer holds a lone UTF-16 surrogate escape")
	}
	return checkMembers(body)
}

// nativeStrictness is what checkMembers refuses: names compare after
// unescaping and strings.ToLower (so "Id" repeats "id"), as Forgejo's
// own case-insensitive readers and encoding/json's field matching would
// equate them; numbers beyond float64 are refused, as the Token walk this
// replaced refused them.
var nativeStrictness = strictjson.Options{
	MaxDepth:   maxNativeDepth,
	Fold:       strings.ToLower,
	FoldASCII:  strictjson.ASCIITable(asciiLower),
	FloatRange: true,
}

// asciiLower is the ASCII half of strings.ToLower (TestASCIILowerAgrees).
var asciiLower = strictjson.ASCIILower

// checkMembers refuses a member repeated in one object, nesting over
// maxNativeDepth and numbers beyond float64 in text json.Valid accepted.
func checkMembers(body []byte) error {
	switch p, _ := strictjson.Check(body, &nativeStrictness); p {
	case strictjson.OK:
		return nil
	case strictjson.TooDeep:
		return errors.New("the answer nests too deep")
	case strictjson.NumberRange:
		return errors.New("the answer holds a number beyond float64")
	default:
		return errors.New("a member appears more than once in one object")
	}
}

// object is a native JSON object read with exact member names (encoding/json
// would match struct fields case-insensitively).
type object map[string]json.RawMessage

func asObject(raw json.RawMessage) (object, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, false
	}
	return o, true
}

// id returns a positive JSON integer member within int64.
func (o object) id(name string) (int64, bool) {
	raw := o[name]
	if !positiveIntRe.Match(raw) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// str returns a string member.
func (o object) str(name string) (string, bool) {
	raw := o[name]
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func (o object) obj(name string) (object, bool) { return asObject(o[name]) }

// entity reads the member object name, which stands for a native record
// (repository, agent, issue), and its positive id. path names the member in
// the refusal ("grant.repository"); the refusal is "" when both are sound.
func (o object) entity(name, path string) (object, int64, string) {
	e, ok := o.obj(name)
	if !ok {
		return nil, 0, path + " is missing"
	}
	id, ok := e.id("id")
	if !ok {
		return nil, 0, path + ".id is not a positive integer"
	}
	return e, id, ""
}

// isNull reports whether a member is absent or null.
func (o object) isNull(name string) bool {
	raw, ok := o[name]
	return !ok || string(raw) == "null"
}

// grantFacts is what the consistency checks of a grant established.
type grantFacts struct {
	id, repositoryID, agentID int64
	state, digest             string
}

// grantWant is what a grant must match: zero values are not checked.
type grantWant struct {
	id          int64
	owner, repo string
	states      []string
}

// checkGrant validates one native grant: positive native IDs for the grant,
// its repository and its participants; the requested grant ID and the
// repository resolved for owner/repo; a known state (one of want.states
// when given); a positive state_revision; the v1 proposal triple with its
// text. The reason never quotes the answer.
func checkGrant(raw json.RawMessage, want grantWant) (grantFacts, string) {
	var f grantFacts
	g, ok := asObject(raw)
	if !ok {
		return f, "a grant is not an object"
	}
	if f.id, ok = g.id("id"); !ok {
		return f, "grant.id is not a positive integer"
	}
	if want.id != 0 && f.id != want.id {
		return f, "grant.id differs from the requested grant_id"
	}
	repo, repositoryID, reason := g.entity("repository", "grant.repository")
	if reason != "" {
		return f, reason
	}
	f.repositoryID = repositoryID
	owner, ok1 := repo.str("owner")
	name, ok2 := repo.str("name")
	if !ok1 || !ok2 || owner == "" || name == "" {
		return f, "grant.repository lacks owner or name"
	}
	if want.owner != "" && (!strings.EqualFold(owner, want.owner) || !strings.EqualFold(name, want.repo)) {
		return f, "grant.repository differs from the requested owner/repo"
	}
	agent, agentID, reason := g.entity("agent", "grant.agent")
	if reason != "" {
		return f, reason
	}
	f.agentID = agentID
	if login, ok := agent.str("login"); !ok || login == "" {
		return f, "grant.agent.login is missing"
	}
	for _, m := range []string{"prepared_by", "approved_by"} {
		if g.isNull(m) {
			continue
		}
		p, ok := g.obj(m)
		if !ok {
			return f, "grant." + m + " is not an object"
		}
		if _, ok := p.id("id"); !ok {
			return f, "grant." + m + ".id is not a positive integer"
		}
	}
	if f.state, ok = g.str("state"); !ok || !knownGrantState(f.state) {
		return f, "grant.state is not a known state"
	}
	if len(want.states) > 0 && !slices.Contains(want.states, f.state) {
		return f, "grant.state is not what the request selected"
	}
	if _, ok := g.id("state_revision"); !ok {
		return f, "grant.state_revision is not a positive integer"
	}
	p, ok := g.obj("proposal")
	if !ok {
		return f, "grant.proposal is missing"
	}
	if f.digest, ok = checkTriple(p); !ok {
		return f, "grant.proposal is not an agent_work_grant.v1 triple"
	}
	if _, ok := p.str("task"); !ok {
		return f, "grant.proposal.task is not a string"
	}
	if _, ok := p.str("summary"); !ok {
		return f, "grant.proposal.summary is not a string"
	}
	return f, ""
}

// checkTriple validates {schema, version, digest} and returns the digest.
func checkTriple(p object) (string, bool) {
	schema, ok1 := p.str("schema")
	digest, ok2 := p.str("digest")
	return digest, ok1 && ok2 && schema == ProposalSchema && string(p["version"]) == "1" && digestRe.MatchString(digest)
}

// submissionWant is what a receipt must match.
type submissionWant struct {
	requestKey string
	digest     string // the digest sent, for a submission; "" on readback
	created    bool   // HTTP 201: a new submission, so outcome "submitted"
}

// checkSubmission validates a receipt against its grant: the request key;
// the grant and repository IDs; positive Issue and actor IDs, the actor
// being the grant's agent; a known outcome; review_state awaiting_review;
// the v1 triple (the one sent, for a submission).
func checkSubmission(raw json.RawMessage, g grantFacts, want submissionWant) string {
	s, ok := asObject(raw)
	if !ok {
		return "submission is not an object"
	}
	if key, ok := s.str("request_key"); !ok || key != want.requestKey {
		return "submission.request_key differs from the request"
	}
	if id, ok := s.id("grant_id"); !ok || id != g.id {
		return "submission.grant_id differs from the grant"
	}
	if id, ok := s.id("repository_id"); !ok || id != g.repositoryID {
		return "submission.repository_id differs from the grant's repository"
	}
	outcome, ok := s.str("outcome")
	if !ok || (outcome != "submitted" && outcome != "issue_deleted" && outcome != "issue_binding_changed") {
		return "submission.outcome is not a known outcome"
	}
	if want.created && outcome != "submitted" {
		return "a new submission does not say submitted"
	}
	if rs, ok := s.str("review_state"); !ok || rs != "awaiting_review" {
		return "submission.review_state is not awaiting_review"
	}
	issue, _, reason := s.entity("issue", "submission.issue")
	if reason != "" {
		return reason
	}
	if _, ok := issue.id("index"); !ok {
		return "submission.issue.index is not a positive integer"
	}
	if u, ok := issue.str("html_url"); !ok || u == "" {
		return "submission.issue.html_url is missing"
	}
	actor, ok := s.obj("actor")
	if !ok {
		return "submission.actor is missing"
	}
	if id, ok := actor.id("id"); !ok || id != g.agentID {
		return "submission.actor is not the grant's agent"
	}
	p, ok := s.obj("proposal")
	if !ok {
		return "submission.proposal is missing"
	}
	digest, ok := checkTriple(p)
	if !ok {
		return "submission.proposal is not an agent_work_grant.v1 triple"
	}
	if want.digest != "" && digest != want.digest {
		return "submission.proposal differs from the submitted triple"
	}
	return ""
}

// splitGrantSubmission checks the envelope {grant, submission} and both parts.
func splitGrantSubmission(body []byte, want grantWant, sw submissionWant) (grant, submission json.RawMessage, reason string) {
	env, ok := asObject(body)
	if !ok {
		return nil, nil, "the answer is not an object"
	}
	grant, submission = env["grant"], env["submission"]
	if len(grant) == 0 || len(submission) == 0 {
		return nil, nil, "the answer lacks grant or submission"
	}
	g, reason := checkGrant(grant, want)
	if reason != "" {
		return nil, nil, reason
	}
	if reason := checkSubmission(submission, g, sw); reason != "" {
		return nil, nil, reason
	}
	return grant, submission, ""
}

func knownGrantState(s string) bool { return slices.Contains(GrantStates, s) }
