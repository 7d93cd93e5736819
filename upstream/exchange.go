package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// Exchange is one request to the fixed origin whose answer is a bounded
// JSON body: every JSON call of the upstream clients (Forgejo's reads and
// grant writes, GitHub's Contents, branch and token routes) is one. The
// sequence it runs — build the request, attach the credential (in the
// transport, see credentialTransport), send it once, check the status, check
// the media type, read at most MaxBody bytes, run the caller's strict check
// — is written here once; each upstream keeps only its table from the
// neutral errors below to its stable codes. The diff evidence stream is not
// an exchange: its body goes through a streaming verifier, not a decode.
type Exchange struct {
	// Method defaults to GET.
	Method string
	// Segments are the unescaped path segments (see Path); Query is sent as given.
	Segments []string
	Query    url.Values
	// Accept is the Accept header; it defaults to application/json.
	Accept string
	// Header holds further request headers (an API version).
	Header http.Header
	// Payload, when not nil, is a JSON request body. It is sent at most
	// once: net/http is given no way to replay it (sendOnce), and the wire
	// sends it again only when not a byte of it was written (resend).
	Payload []byte
	// Credential is presented by the transport; zero sends none.
	Credential Credential
	// Success lists the statuses whose body is read; it defaults to 200.
	Success []int
	// MaxBody bounds the body of a success.
	MaxBody int64
	// RefuseDeclared refuses a success whose Content-Length is over MaxBody
	// before reading a byte of it (StageBody, KindTooLarge); otherwise the
	// bound is met by reading.
	RefuseDeclared bool
	// ErrorBody, when positive, is how many bytes of a non-success body
	// StatusError.Body may hold (to recognise a refusal's kind); zero reads none.
	ErrorBody int64
	// IsJSON decides whether a success's Content-Type is acceptable.
	IsJSON func(contentType string) bool
	// Check, if set, refuses a body that two readers could read differently.
	Check func(body []byte) error
	// Buffer, when not nil, is called once a success's head is accepted,
	// just before its body is read, for a buffer to read it into
	// (ReadBoundedInto): its storage when large enough; the buffer is then
	// set to the storage read into. Answer.Body aliases it, so the caller,
	// which owns it, reuses it only when done with the answer. Taken no
	// earlier, a buffer is not held through the wait for the answer.
	Buffer func() *[]byte
	// Close sends the exchange on a connection of its own that is closed
	// after it (Connection: close), for rare exchanges followed at once by
	// another: bytes a misbehaving upstream sends past Content-Length can
	// then never be read as the head of the next answer on a reused
	// connection.
	Close bool
}

// Answer is a successful exchange.
type Answer struct {
	Status int
	Header http.Header
	// Body is the whole checked body, surrounding white space removed.
	Body []byte
}

// StatusError is an answer with a status outside Exchange.Success. Header
// is kept for the tables that read it (rate limits, a stock forge's 404);
// Body holds at most Exchange.ErrorBody bytes and never enters a message.
type StatusError struct {
	Status int
	Header http.Header
	Body   []byte
}

func (e *StatusError) Error() string {
	return "upstream answered with HTTP " + strconv.Itoa(e.Status)
}

// Stage names where an accepted answer head failed.
type Stage int

// The stages of an answer after its status was accepted.
const (
	// StageMediaType: the Content-Type is not JSON.
	StageMediaType Stage = iota + 1
	// StageBody: reading the body failed or passed MaxBody (Err is an *Error).
	StageBody
	// StageCheck: Exchange.Check refused the body (Err is its error).
	StageCheck
	// StageDecode: the body does not decode into the wanted type.
	StageDecode
)

// AnswerError is a success status whose answer could not be used: after
// it, unlike after a transport *Error, the request certainly reached the
// upstream (a write may have been committed).
type AnswerError struct {
	Stage  Stage
	Status int
	Err    error
}

func (e *AnswerError) Error() string {
	switch e.Stage {
	case StageMediaType:
		return "upstream answered with a non-JSON media type"
	case StageBody:
		return "upstream answer body: " + e.Err.Error()
	case StageCheck:
		return "upstream answer refused: " + e.Err.Error()
	default:
		return "upstream answer is malformed JSON"
	}
}

// Unwrap returns the cause.
func (e *AnswerError) Unwrap() error { return e.Err }

// Exchange sends x and returns the checked answer. Its errors are neutral
// and typed: *Error (not sent, or no usable answer head; KindRequest means
// it never left), *StatusError, or *AnswerError.
func (c *Client) Exchange(ctx context.Context, x Exchange) (*Answer, error) {
	method := x.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if x.Payload != nil {
		body = bytes.NewReader(x.Payload)
	}
	req, err := c.NewRequest(WithCredential(ctx, x.Credential), method, x.Query, body, x.Segments...)
	if err != nil {
		return nil, err
	}
	req.Close = x.Close
	for k, vs := range x.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	accept := x.Accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	if x.Payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	success := x.Success
	if success == nil {
		success = []int{http.StatusOK}
	}
	if !slices.Contains(success, resp.StatusCode) {
		se := &StatusError{Status: resp.StatusCode, Header: resp.Header}
		if x.ErrorBody > 0 {
			se.Body, _ = ReadBounded(resp.Body, x.ErrorBody, resp.ContentLength)
		}
		return nil, se
	}
	// A declared length over the bound is refused before anything else
	// about the answer is looked at.
	if x.RefuseDeclared && resp.ContentLength > x.MaxBody {
		return nil, &AnswerError{Stage: StageBody, Status: resp.StatusCode,
			Err: &Error{Kind: KindTooLarge, Status: resp.StatusCode, Reason: "the declared length is over the bound"}}
	}
	if x.IsJSON == nil || !x.IsJSON(resp.Header.Get("Content-Type")) {
		return nil, &AnswerError{Stage: StageMediaType, Status: resp.StatusCode}
	}
	var buf *[]byte
	var into []byte
	if x.Buffer != nil {
		buf = x.Buffer()
		into = *buf
	}
	b, err := ReadBoundedInto(into, resp.Body, x.MaxBody, resp.ContentLength)
	if buf != nil && b != nil {
		*buf = b[:0]
	}
	if err != nil {
		var ue *Error
		if !errors.As(err, &ue) {
			err = &Error{Kind: KindUnavailable, Status: resp.StatusCode, Reason: "the body could not be read", Err: err}
		}
		return nil, &AnswerError{Stage: StageBody, Status: resp.StatusCode, Err: err}
	}
	if x.Check != nil {
		if err := x.Check(b); err != nil {
			return nil, &AnswerError{Stage: StageCheck, Status: resp.StatusCode, Err: err}
		}
	}
	return &Answer{Status: resp.StatusCode, Header: resp.Header, Body: bytes.TrimSpace(b)}, nil
}

// ExchangeJSON runs x and decodes its checked body into a T, in the spirit
// of the go-sdk's oauthex getJSON: a body that does not decode is an
// *AnswerError at StageDecode.
func ExchangeJSON[T any](ctx context.Context, c *Client, x Exchange) (T, *Answer, error) {
	var v T
	a, err := c.Exchange(ctx, x)
	if err != nil {
		return v, nil, err
	}
	if err := json.Unmarshal(a.Body, &v); err != nil {
		return v, nil, &AnswerError{Stage: StageDecode, Status: a.Status, Err: err}
	}
	return v, a, nil
}
