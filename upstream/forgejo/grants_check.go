package forgejo

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
		return errors.New("the answer is not valid UTF-8")
	}
	if !json.Valid(body) {
		return errors.New("the answer is not valid JSON")
	}
	if loneSurrogate(body) {
		return errors.New("the answer holds a lone UTF-16 surrogate escape")
	}
	return checkMembers(body)
}

// checkMembers walks JSON text that json.Valid already accepted and refuses
// a member name repeated in one object (names compared after unescaping and
// strings.ToLower, so "Id" repeats "id"), nesting over maxNativeDepth, or a
// number beyond float64's range (as the Token walk it replaces did).
//
// It is a single pass over the bytes rather than a walk over
// encoding/json's Decoder.Token, which allocates for every token and was
// the largest cost of an anonymous tool call of the gateway's own (see
// docs/performance.md). Because the text is known to be valid JSON, only
// string boundaries, brackets and commas need reading: in an object the
// string right after '{' or ',' is a member name. Each object's names go
// into a set reused per depth; a name that is plain ASCII is folded in
// place, any other is unescaped by encoding/json first, as Token did.
func checkMembers(body []byte) error {
	type frame struct {
		object bool
		key    bool // the next string in this object is a member name
	}
	var (
		stack [maxNativeDepth]frame
		sets  [maxNativeDepth]map[string]struct{}
		depth int
		fold  []byte
	)
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '[':
			if depth >= maxNativeDepth {
				return errors.New("the answer nests too deep")
			}
			stack[depth] = frame{object: c == '{', key: c == '{'}
			if c == '{' {
				if sets[depth] == nil {
					sets[depth] = map[string]struct{}{}
				}
				clear(sets[depth])
			}
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth > 0 && stack[depth-1].object {
				stack[depth-1].key = true
			}
		case '"':
			end := stringEnd(body, i)
			if depth > 0 && stack[depth-1].key {
				stack[depth-1].key = false
				var ok bool
				if fold, ok = foldASCIIName(fold[:0], body[i+1:end]); !ok {
					var name string
					if err := json.Unmarshal(body[i:end+1], &name); err != nil {
						return errors.New("the answer is not valid JSON")
					}
					fold = append(fold[:0], strings.ToLower(name)...)
				}
				set := sets[depth-1]
				if _, seen := set[string(fold)]; seen {
					return errors.New("a member appears more than once in one object")
				}
				set[string(fold)] = struct{}{}
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end := i + 1
			for end < len(body) && isNumberByte(body[end]) {
				end++
			}
			if !fitsFloat64(body[i:end]) {
				return errors.New("the answer holds a number beyond float64")
			}
			i = end - 1
		}
	}
	return nil
}

func isNumberByte(b byte) bool {
	return '0' <= b && b <= '9' || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-'
}

// fitsFloat64 reports whether a JSON number is within float64's range,
// which readers that decode numbers as doubles (encoding/json into any,
// JavaScript) need; Forgejo never sends one beyond it. Short integers, the
// IDs and counts of real answers, are in range without parsing.
func fitsFloat64(num []byte) bool {
	if len(num) <= 15 && !bytes.ContainsAny(num, ".eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at body[open]; the text is valid JSON, so there is one.
func stringEnd(body []byte, open int) int {
	for j := open + 1; ; {
		k := bytes.IndexAny(body[j:], `"\`)
		if body[j+k] == '"' {
			return j + k
		}
		j += k + 2 // a backslash and the character it escapes
	}
}

// foldASCIIName appends the lower-case form of a member name that is plain
// ASCII without escapes, which is strings.ToLower of its value; ok is
// false for any other name.
func foldASCIIName(dst, raw []byte) ([]byte, bool) {
	for _, b := range raw {
		switch {
		case b == '\\' || b >= utf8.RuneSelf:
			return dst, false
		case 'A' <= b && b <= 'Z':
			dst = append(dst, b+'a'-'A')
		default:
			dst = append(dst, b)
		}
	}
	return dst, true
}

// loneSurrogate reports whether raw JSON text holds a \u escape of a UTF-16
// surrogate that is not part of a valid pair.
func loneSurrogate(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++
			continue
		}
		r, ok := hex4(b, i+2)
		switch {
		case !ok:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(b, i+8)
			if !ok || b[i+6] != '\\' || b[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(n), err == nil
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
	repo, ok := g.obj("repository")
	if !ok {
		return f, "grant.repository is missing"
	}
	if f.repositoryID, ok = repo.id("id"); !ok {
		return f, "grant.repository.id is not a positive integer"
	}
	owner, ok1 := repo.str("owner")
	name, ok2 := repo.str("name")
	if !ok1 || !ok2 || owner == "" || name == "" {
		return f, "grant.repository lacks owner or name"
	}
	if want.owner != "" && (!strings.EqualFold(owner, want.owner) || !strings.EqualFold(name, want.repo)) {
		return f, "grant.repository differs from the requested owner/repo"
	}
	agent, ok := g.obj("agent")
	if !ok {
		return f, "grant.agent is missing"
	}
	if f.agentID, ok = agent.id("id"); !ok {
		return f, "grant.agent.id is not a positive integer"
	}
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
	issue, ok := s.obj("issue")
	if !ok {
		return "submission.issue is missing"
	}
	if _, ok := issue.id("id"); !ok {
		return "submission.issue.id is not a positive integer"
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
