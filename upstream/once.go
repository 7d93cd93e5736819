package upstream

import (
	"io"
	"net/http"
)

// sendOnce makes req a request net/http never sends twice
// (docs/architecture.md#upstream-transport: each diff call makes exactly one
// evidence GET, each grant POST is sent once), for every upstream client at
// once.
//
// net/http's Transport re-sends a request on a new connection by itself
// when a reused keep-alive connection fails before an answer
// (Transport.roundTrip, persistConn.shouldRetryRequest): always when
// nothing was written and the request has no body or a GetBody to rewind
// it, and after the request was written when the server closed the
// connection without answering (errServerClosedIdle) and the request
// isReplayable: GET, HEAD, OPTIONS or TRACE — or any method with an
// Idempotency-Key header — whose body is nil, http.NoBody or rewindable.
// HTTP/2 re-sends, too, a stream refused by the server or cut by GOAWAY
// when the body is nil or rewindable (http2shouldRetryRequest). A GET that
// Core received and then dropped the connection on would so be sent
// twice, and the second connection's answer returned as the call's.
//
// Every one of those rules asks the same question first — can the body be
// replayed? — so sendOnce answers no: GetBody is cleared, and a request
// without a body gets an empty one of its own type (not http.NoBody).
// net/http then retries only what provably never left the gateway (an
// HTTP/2 connection found unusable before the stream was opened); an
// attempt lost on the wire is the caller's error (KindUnavailable:
// upstream_unavailable, provider_unavailable, delivery_uncertain for a
// write).
//
// The empty body changes nothing on the wire: TransferEncoding "identity"
// tells net/http's HTTP/1.1 writer neither to announce a length nor to
// chunk (Request.Write), so it also skips the one-byte probe it would run
// on an unknown-length GET body (transferWriter.probeRequestBody, which
// falls back to a chunked body when its reader is slow), and the request
// goes out as a body-less GET does: no Content-Length, no
// Transfer-Encoding, nothing after the head. HTTP/2 ends the stream with
// an empty DATA frame instead of on the HEADERS frame.
//
// The alternatives weighed: disabling keep-alive makes every connection
// fresh (net/http never retries on one) but costs a TCP and TLS handshake
// per request; watching the second write through httptrace can only tell
// after the duplicate left, not prevent it.
func sendOnce(req *http.Request) {
	req.GetBody = nil
	if req.Body == nil || req.Body == http.NoBody {
		req.Body = emptyBody{}
		req.ContentLength = 0
		req.TransferEncoding = []string{"identity"}
	}
}

// emptyBody is an empty request body net/http does not recognise as
// http.NoBody, so it cannot count it as replayable.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }

// WriteTo writes nothing. net/http copies a body of unknown length with
// io.Copy; without WriteTo that would end in the connection's ReadFrom,
// which allocates a 32 KiB buffer for every request.
func (emptyBody) WriteTo(io.Writer) (int64, error) { return 0, nil }

func (emptyBody) Close() error { return nil }
