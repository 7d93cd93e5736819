package github

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // git blob IDs are SHA-1; used to check integrity, not for security
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Bounds of docs/architecture.md#documents-contract.
const (
	// MaxFileBytes is the largest document read: 1 MiB decoded.
	MaxFileBytes = 1 << 20
	// MaxContentsResponse bounds the Contents JSON before it is parsed,
	// whether or not the response carries a (truthful) Content-Length: room
	// for the base64 and JSON overhead around a 1 MiB file.
	MaxContentsResponse = 1_500_000
	// githubInlineBytes is the size up to which GitHub always sends a
	// file's content inline ("1 MB", read as decimal to be safe).
	githubInlineBytes = 1_000_000
	// maxErrorBody bounds the body of an error answer, read only to tell
	// GitHub's too_large refusal from other 403s.
	maxErrorBody = 64 << 10
)

// ObjectMediaType asks the Contents route for one object for every kind of
// path (a directory answers {"type":"dir","entries":[…]}, not an array) and
// for files between 1 and 100 MB answers encoding "none" instead of a 403.
const ObjectMediaType = "application/vnd.github.object+json"

// DefaultCallTimeout is the total deadline of one call to GitHub (token,
// read and its one retry) when none is set: a Contents answer is at most
// MaxContentsResponse bytes, which even a slow link delivers in seconds,
// so an answer still arriving after a minute is a trickle holding a
// request slot, a goroutine and a connection, not a read worth finishing
// (docs/security.md, "a caller that disconnects"). Unlike the diff, whose
// contract has no total deadline, a document read has a bounded size.
const DefaultCallTimeout = 60 * time.Second

// Client reads repository contents as a GitHub App installation.
type Client struct {
	up          *upstream.Client
	tokens      *Installations
	now         func() time.Time
	callTimeout time.Duration
}

// SetCallTimeout sets the total deadline of each call (github.call_timeout);
// zero or less means DefaultCallTimeout. Call it before use.
func (c *Client) SetCallTimeout(d time.Duration) { c.callTimeout = d }

// NewClient returns a Contents client over the strict client bound to the
// GitHub API origin and the installation token source.
func NewClient(up *upstream.Client, tokens *Installations) *Client {
	return &Client{up: up, tokens: tokens, now: time.Now}
}

// FileRequest names one file at one commit, and the installation that may
// read it (the repository binding's github_installation_id).
type FileRequest struct {
	InstallationID int64
	Owner, Repo    string
	Path           string // relative, '/'-separated, already validated
	Commit         string // 40 lowercase hex
}

// File is a regular file read and checked: its decoded length equals the
// size GitHub reported and its bytes hash to the blob ID GitHub reported.
type File struct {
	Path    string
	BlobSHA string
	Content []byte
	// buf is Content's storage when it came from the pool (buffers.go),
	// given back by Release.
	buf *[]byte
}

// Release gives the file's buffer back for a later read to reuse, and
// empties Content. A reader that keeps no byte of Content past this
// point (it copied what it answers) calls it; one that does not call it
// leaves the buffer to the collector.
func (f *File) Release() {
	if f == nil {
		return
	}
	buf := f.buf
	f.buf, f.Content = nil, nil
	putBuffer(buf)
}

// GetFile reads one regular file: GET /repos/{owner}/{repo}/contents/{path}?ref={commit}.
// Anything but a regular file at exactly the requested path is refused
// (not_regular_file), as are files over MaxFileBytes (file_too_large) and
// responses over MaxContentsResponse (response_too_large). A token GitHub
// refuses with 401 is dropped and the read is tried once more with a fresh
// one.
func (c *Client) GetFile(ctx context.Context, r FileRequest) (*File, error) {
	if strings.ContainsAny(r.Path, "\x00\\") || strings.HasPrefix(r.Path, "/") {
		return nil, toolerr.New(toolerr.InvalidArguments, "the document path is not a relative '/'-separated path")
	}
	return withToken(ctx, c, r.InstallationID, r.Repo, func(ctx context.Context, token string) (*File, error) {
		f, _, err := c.getFile(ctx, r, token)
		return f, err
	})
}

// getFile is one read of the file with one token; it returns the native
// status too (0 when no answer came).
func (c *Client) getFile(ctx context.Context, r FileRequest, token string) (*File, int, error) {
	x := apiExchange(token, ObjectMediaType, url.Values{"ref": {r.Commit}}, MaxContentsResponse, routeContents, r.Owner, r.Repo, r.Path)
	x.ErrorBody, x.RefuseDeclared = maxErrorBody, true
	// The answer is read into a reused buffer, given back once parsed:
	// nothing parseFile returns aliases it (buffers.go).
	var buf *[]byte
	x.Buffer = func() *[]byte { buf = getBuffer(); return buf }
	defer func() { putBuffer(buf) }()
	a, err := c.up.Exchange(ctx, x)
	if err != nil {
		return nil, nativeStatus(err), c.contentsError(err)
	}
	f, err := parseFile(a.Body, r.Path)
	return f, a.Status, err
}

// contentsStatus is the Contents route's table.
var contentsStatus = statusTable{
	http.StatusNotFound:     {toolerr.ProviderNotFound, "GitHub has no such file at the pinned commit, or the installation cannot see it"},
	http.StatusUnauthorized: {toolerr.ProviderForbidden, "GitHub did not accept the installation token"},
	http.StatusForbidden:    {toolerr.ProviderForbidden, "GitHub refused access to the file"},
}

// contentsError maps a failed Contents exchange. A 403 that is not a rate
// limit may be GitHub's refusal of a blob over 1 MB, recognised from the
// (bounded) error body, which never enters the error.
func (c *Client) contentsError(err error) error {
	var se *upstream.StatusError
	if errors.As(err, &se) && se.Status == http.StatusForbidden && isTooLarge(se.Body) {
		if _, limited := rateLimited(se.Status, se.Header, c.now()); !limited {
			return toolerr.Wrap(se, toolerr.FileTooLarge, "the file is larger than %d bytes", MaxFileBytes).With("native_status", se.Status)
		}
	}
	return answerError(err, "Contents", contentsStatus, c.now())
}

// isTooLarge recognises GitHub's refusal of a blob over 1 MB:
// {"errors":[{"code":"too_large",…}],…}.
func isTooLarge(body []byte) bool {
	var b struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for _, e := range b.Errors {
		if e.Code == "too_large" {
			return true
		}
	}
	return false
}

// contentsObject is the part of a Contents answer the gateway reads.
type contentsObject struct {
	Type     string          `json:"type"`
	Path     *string         `json:"path"`
	Size     *int64          `json:"size"`
	SHA      string          `json:"sha"`
	Encoding *string         `json:"encoding"`
	Content  *string         `json:"content"`
	Entries  json.RawMessage `json:"entries"`
}

// maxContentsDepth bounds the nesting of a Contents (or token) answer;
// GitHub's nest four levels (a directory's entries and their _links).
const maxContentsDepth = 32

// jsonDepth is the deepest nesting of arrays and objects in JSON text.
func jsonDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// contentsMembers are the JSON names of contentsObject's fields.
var contentsMembers = []string{"type", "path", "size", "sha", "encoding", "content", "entries"}

// unambiguousMembers reports whether a Contents object's top-level members
// read the same to encoding/json as to an exact reader. encoding/json
// matches member names to fields without regard to case (folding the
// Kelvin sign and long s too) and keeps the last of repeated members, so
// {"path":"a.md","PATH":"b.md"} would pass the path check as b.md while
// any other reader sees a.md (FuzzContentsJSON, seed
// hostile-case-folded-path). A member repeated under any spelling, or a
// known member spelt in another case, is refused.
func unambiguousMembers(obj []byte, known []string) bool {
	if len(obj) == 0 || obj[0] != '{' || !json.Valid(obj) {
		return false
	}
	seen := make(map[string]bool, 16)
	ok := true
	strictjson.Members(obj, func(name string, _ json.RawMessage) bool {
		folded := strings.ToLower(strings.ToUpper(name))
		if seen[folded] || (slices.Contains(known, folded) && name != folded) {
			ok = false
			return false
		}
		seen[folded] = true
		return true
	})
	return ok
}

// kindNames are the object types a refusal may name; anything else is
// reported as "other", so no upstream text reaches the caller.
var kindNames = map[string]string{"dir": "directory", "symlink": "symlink", "submodule": "submodule"}

// parseFile checks a Contents answer and decodes the file it holds.
func parseFile(body []byte, wantPath string) (*File, error) { return parseAnswer(body, wantPath, true) }

// parseAnswer is parseFile; without split it reads the whole answer with
// encoding/json, the reference the split reading is fuzzed against.
func parseAnswer(body []byte, wantPath string, split bool) (*File, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer is malformed JSON")
		}
		return nil, toolerr.New(toolerr.NotRegularFile, "the path is a directory, not a regular file").With("type", "directory")
	}
	// The file's base64 is checked and decoded apart from the rest when it
	// is plain base64 lines (contentlines.go); the rest, content emptied,
	// goes through every check below.
	var sf splitFile
	if split {
		if sf, split = splitContent(trimmed); split {
			trimmed = sf.rest
		}
	}
	kept := false // whether the File returned keeps sf's buffer
	defer func() {
		if !kept {
			putBuffer(sf.buf)
		}
	}()
	if jsonDepth(trimmed) > maxContentsDepth {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer nests deeper than %d levels", maxContentsDepth)
	}
	var o contentsObject
	if err := json.Unmarshal(trimmed, &o); err != nil {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer is malformed JSON")
	}
	if !unambiguousMembers(trimmed, contentsMembers) {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer repeats a member or spells one in another case")
	}
	if o.Type != "file" || len(o.Entries) > 0 && string(o.Entries) != "null" {
		kind, ok := kindNames[o.Type]
		if !ok {
			kind = "other"
			if o.Type == "" {
				return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer has no type")
			}
		}
		if len(o.Entries) > 0 && string(o.Entries) != "null" {
			kind = "directory"
		}
		return nil, toolerr.New(toolerr.NotRegularFile, "the path is a %s, not a regular file", kind).With("type", kind)
	}
	if o.Path == nil || o.Size == nil || *o.Size < 0 || o.Encoding == nil {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer lacks path, size or encoding")
	}
	if *o.Path != wantPath && strings.IndexFunc(*o.Path, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) >= 0 {
		// No file has such a name (the path was checked when it was
		// allowlisted): the answer is broken, not a symlink.
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer names a path with control characters")
	}
	if *o.Path != wantPath {
		// GitHub answers a symlink to a file with the target file.
		return nil, toolerr.New(toolerr.NotRegularFile, "the path is a symlink to another file, not a regular file").With("type", "symlink")
	}
	if *o.Size > MaxFileBytes {
		return nil, toolerr.New(toolerr.FileTooLarge, "the file is larger than %d bytes", MaxFileBytes).With("max_file_bytes", MaxFileBytes)
	}
	if *o.Encoding == "none" {
		// GitHub sends no content for files over 1 MB (its MB may be
		// decimal: between 1,000,000 bytes and MaxFileBytes the file is
		// too large for GitHub to inline); for a smaller one the answer
		// contradicts itself.
		if *o.Size > githubInlineBytes {
			return nil, toolerr.New(toolerr.FileTooLarge, "GitHub does not send the content of a file of %d bytes (over 1 MB)", *o.Size).With("max_file_bytes", MaxFileBytes)
		}
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub sent no content (encoding \"none\") for a file of %d bytes, which it sends inline", *o.Size)
	}
	if *o.Encoding != "base64" || o.Content == nil {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer has an unexpected encoding")
	}
	// GitHub breaks base64 into lines; the decoder skips \r and \n only.
	var content []byte
	var err error
	if split {
		content, err = sf.content, sf.err
	} else {
		content, err = base64.StdEncoding.Strict().DecodeString(*o.Content)
	}
	if err != nil {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer has invalid base64 content")
	}
	if int64(len(content)) != *o.Size {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer decodes to %d bytes, not the %d it reports", len(content), *o.Size)
	}
	sha := sf.blobSHA // hashed while it was decoded, when the size came first
	if sha == "" || sf.size != *o.Size {
		sha = BlobSHA(content)
	}
	if o.SHA != sha {
		return nil, toolerr.New(toolerr.ProviderMalformed, "GitHub's Contents answer does not hash to the blob ID it reports")
	}
	// Clipped: past its length a reused buffer holds an earlier file.
	f := &File{Path: *o.Path, BlobSHA: o.SHA, Content: content[:len(content):len(content)]}
	if split {
		f.buf, kept = sf.buf, true
	}
	return f, nil
}

// BlobSHA is git's object ID of a blob with this content (SHA-1 object
// format, GitHub's): the hex SHA-1 of "blob <len>\x00<content>".
func BlobSHA(content []byte) string {
	h := sha1.New() //nolint:gosec // git object ID, not a security hash
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
