package diffread_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

// TestVerifierBounds: a page outside the reader's bounds — a manifest
// that is not exactly the contract's, offsets that do not advance from
// where the previous page ended, a diff over MaxBytes — is a BoundError
// naming the page, and nothing of it is written.
func TestVerifierBounds(t *testing.T) {
	diff := testDiff()
	o := serverOptions(diff)
	for _, c := range []struct {
		name     string
		edit     func(int, *diffreadtest.ServedPage)
		maxBytes int64
		page     int
		bound    diffread.Bound
		says     string
	}{
		{"a new member in the manifest on page 2", onPage(2, func(p *diffreadtest.ServedPage) { p.Manifest["extra"] = 1 }),
			0, 2, diffread.BoundStrict, `manifest has an unknown member "extra"`},
		{"a member the reader does not know in a nested object", onPage(1, func(p *diffreadtest.ServedPage) {
			p.Manifest["repository"].(map[string]any)["full_name"] = "team/project"
		}), 0, 1, diffread.BoundStrict, `manifest.repository has an unknown member "full_name"`},
		{"content spelled Content", onPage(1, func(p *diffreadtest.ServedPage) {
			p.Manifest["Content"] = p.Manifest["content"]
			delete(p.Manifest, "content")
		}), 0, 1, diffread.BoundStrict, `unknown member "Content"`},
		{"observations without a member", onPage(3, func(p *diffreadtest.ServedPage) {
			delete(p.Manifest["observations"].(map[string]any)["target_tip"].(map[string]any), "observed_at")
		}), 0, 3, diffread.BoundStrict, `manifest.observations.target_tip has no member "observed_at"`},
		{"a null where none is allowed", onPage(1, func(p *diffreadtest.ServedPage) { p.Manifest["content"].(map[string]any)["sha256"] = nil }),
			0, 1, diffread.BoundStrict, "manifest.content.sha256 must be a string"},
		{"a byte_count beyond 2^53-1", onPage(1, func(p *diffreadtest.ServedPage) {
			p.Manifest["content"].(map[string]any)["byte_count"] = int64(1) << 53
		}), 0, 1, diffread.BoundStrict, "manifest.content.byte_count must be an integer from 0 to 2^53-1"},
		{"a gap before page 2", onPage(2, func(p *diffreadtest.ServedPage) { *p = *diffreadtest.NewServedPage(o, p.ByteOffset+10) }),
			0, 2, diffread.BoundProgress, "byte_offset 110, where the previous page ended at 100"},
		{"an overlap before page 3", onPage(3, func(p *diffreadtest.ServedPage) { *p = *diffreadtest.NewServedPage(o, p.ByteOffset-1) }),
			0, 3, diffread.BoundProgress, "byte_offset 199, where the previous page ended at 200"},
		{"page 1 again as page 2", onPage(2, func(p *diffreadtest.ServedPage) { *p = *diffreadtest.NewServedPage(o, 0) }),
			0, 2, diffread.BoundProgress, "byte_offset 0, where the previous page ended at 100"},
		{"an empty page before eof", onPage(2, func(p *diffreadtest.ServedPage) {
			p.Data, p.ChunkBytes, p.NextByteOffset, p.ChunkSHA256 = "", 0, p.ByteOffset,
				"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
			p.Text = new("")
		}), 0, 2, diffread.BoundProgress, "chunk_bytes 0"},
		{"a next_byte_offset that goes back", onPage(1, func(p *diffreadtest.ServedPage) { p.NextByteOffset = 0 }),
			0, 1, diffread.BoundProgress, "next_byte_offset 0 from byte_offset 0"},
		// A later page cannot raise byte_count past MaxBytes: it is part of
		// the diff's identity ("content changes on page 2", TestVerifierChecks).
		{"a diff over MaxBytes", nil, 299, 1, diffread.BoundMaxBytes,
			"the diff has 300 bytes (manifest.content.byte_count), over the limit of 299"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			res, err := feedLimited(t, o, c.edit, c.maxBytes, &w)
			written := int64(100 * (c.page - 1))
			if !bytes.Equal(w.Bytes(), diff[:written]) {
				t.Fatalf("%d bytes written; want the %d before page %d", w.Len(), written, c.page)
			}
			var be *diffread.BoundError
			if !errors.As(err, &be) {
				t.Fatalf("got %v, %v; want a bound error", res, err)
			}
			if be.Page != c.page || be.Bound != c.bound || be.Offset != written || !strings.Contains(be.Detail, c.says) {
				t.Fatalf("refused page %d at %d, %s: %q; want page %d at %d, %s: %q", be.Page, be.Offset, be.Bound, be.Detail,
					c.page, written, c.bound, c.says)
			}
			t.Log(err)
		})
	}
	t.Run("a diff of exactly MaxBytes", func(t *testing.T) {
		var w bytes.Buffer
		if _, err := feedLimited(t, o, nil, 300, &w); err != nil || !bytes.Equal(w.Bytes(), diff) {
			t.Fatalf("%v, %d bytes", err, w.Len())
		}
	})
}

// binaryDiff is n bytes that are not UTF-8, so that pages carry data only
// and their responses stay well under the envelope at any window.
func binaryDiff(n int) []byte {
	return bytes.Repeat([]byte{0xff, 0x00, 'x', '\n'}, n/4)
}

// padTo writes the answer padded with trailing JSON whitespace to exactly
// size bytes, with or without a Content-Length.
func padTo(t *testing.T, size int, withLength bool) func(http.ResponseWriter, *http.Request, string, int, []byte) {
	return func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte) {
		if method == "tools/call" {
			if len(answer) > size {
				t.Errorf("an answer of %d bytes cannot be padded to %d", len(answer), size)
			}
			answer = append(answer, bytes.Repeat([]byte(" "), size-len(answer))...)
		}
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		}
		w.WriteHeader(status)
		w.Write(answer)
	}
}

// TestReadEnvelope: a response of exactly the envelope's 49,000 bytes is
// read; one byte more is refused as the page it answers, whether its
// length is announced or not, and nothing of that page is written.
func TestReadEnvelope(t *testing.T) {
	// The whole JSON-RPC response to a page (docs/architecture.md#page-fitting).
	const envelope = 49000
	diff := binaryDiff(64 << 10)
	for _, c := range []struct {
		name       string
		size       int
		withLength bool
		refused    bool
	}{
		{"exactly the envelope", envelope, false, false},
		{"exactly the envelope, with its length", envelope, true, false},
		{"one byte over", envelope + 1, false, true},
		{"one byte over, with its length", envelope + 1, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := diffreadtest.Options{Owner: target.Owner, Repo: target.Repo, Index: target.Index, Diff: diffreadtest.Bytes(diff),
				Deliver: padTo(t, c.size, c.withLength)}
			s := diffreadtest.Start(t, o)
			var w bytes.Buffer
			res, err := read(t, s.URL, "", &w)
			if !c.refused {
				if err != nil || !bytes.Equal(w.Bytes(), diff) {
					t.Fatalf("%+v, %v", res, err)
				}
				return
			}
			var be *diffread.BoundError
			if res != nil || !errors.As(err, &be) || be.Bound != diffread.BoundEnvelope || be.Page != 1 || w.Len() != 0 ||
				!strings.Contains(err.Error(), "over the 49000-byte envelope") {
				t.Fatalf("got %+v, %v, %d bytes written", res, err, w.Len())
			}
			t.Log(err)
		})
	}
}

// TestReadIdle: a call ends when no byte came for IdleTimeout — an answer
// that never comes, or one that stops mid-body — and a page that keeps
// trickling in is read whole, however long it takes in all.
func TestReadIdle(t *testing.T) {
	const idle = time.Second
	diff := binaryDiff(64 << 10) // two pages
	stall := func(page int, half bool) func(http.ResponseWriter, *http.Request, string, int, []byte) {
		var calls atomic.Int32
		return func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte) {
			if method == "tools/call" {
				if calls.Add(1) == int32(page) {
					if half {
						w.WriteHeader(status)
						w.Write(answer[:len(answer)/2])
						w.(http.Flusher).Flush()
					}
					<-r.Context().Done()
					return
				}
			}
			w.WriteHeader(status)
			w.Write(answer)
		}
	}
	for _, c := range []struct {
		name    string
		deliver func(http.ResponseWriter, *http.Request, string, int, []byte)
		page    int
	}{
		{"no answer to page 1", stall(1, false), 1},
		{"page 2 stops mid-body", stall(2, true), 2},
		{"no answer while connecting", func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte) {
			if method == "server/discover" || method == "initialize" {
				<-r.Context().Done()
				return
			}
			w.WriteHeader(status)
			w.Write(answer)
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := diffreadtest.Options{Owner: target.Owner, Repo: target.Repo, Index: target.Index, Diff: diffreadtest.Bytes(diff),
				Deliver: c.deliver}
			s := diffreadtest.Start(t, o)
			var w bytes.Buffer
			res, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, IdleTimeout: idle}, target, &w)
			var be *diffread.BoundError
			if res != nil || !errors.As(err, &be) || be.Bound != diffread.BoundIdle || be.Page != c.page ||
				be.Detail != "no bytes for 1s" || int64(w.Len()) != be.Offset {
				t.Fatalf("got %+v, %v, %d bytes written", res, err, w.Len())
			}
			t.Log(err)
		})
	}
	t.Run("a page that trickles in for longer than the idle timeout", func(t *testing.T) {
		// 4 s in all for the first page, in pauses a thirtieth of the idle
		// timeout: the margin holds on a loaded machine.
		const idle, pieces, pause = 3 * time.Second, 40, 100 * time.Millisecond
		var longest atomic.Int64 // nanoseconds between two writes, for the failure message
		var calls atomic.Int32
		o := diffreadtest.Options{Owner: target.Owner, Repo: target.Repo, Index: target.Index, Diff: diffreadtest.Bytes(diff),
			Deliver: func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte) {
				w.WriteHeader(status)
				if method != "tools/call" || calls.Add(1) > 1 {
					w.Write(answer)
					return
				}
				last := time.Now()
				for i := range pieces {
					w.Write(answer[i*len(answer)/pieces : (i+1)*len(answer)/pieces])
					w.(http.Flusher).Flush()
					time.Sleep(pause)
					longest.Store(max(longest.Load(), int64(time.Since(last))))
					last = time.Now()
				}
			}}
		s := diffreadtest.Start(t, o)
		var w bytes.Buffer
		start := time.Now()
		res, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, IdleTimeout: idle}, target, &w)
		if err != nil || res.Pages != 2 || !bytes.Equal(w.Bytes(), diff) {
			t.Fatalf("%+v, %v (the longest pause between two writes was %v)", res, err, time.Duration(longest.Load()))
		}
		t.Logf("2 pages in %v with an idle timeout of %v", time.Since(start), idle)
	})
}

// TestReadMaxBytes: Read refuses a diff longer than MaxBytes on its first
// page, before writing any of it, and reads one of exactly MaxBytes.
func TestReadMaxBytes(t *testing.T) {
	diff := testDiff()
	s := diffreadtest.Start(t, serverOptions(diff))
	var w bytes.Buffer
	res, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, MaxBytes: 299}, target, &w)
	if res != nil || !isBound(err, diffread.BoundMaxBytes, 1) || w.Len() != 0 || s.Calls() != 1 {
		t.Fatalf("got %+v, %v, %d bytes written after %d calls", res, err, w.Len(), s.Calls())
	}
	if _, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, MaxBytes: 300}, target, &w); err != nil ||
		!bytes.Equal(w.Bytes(), diff) {
		t.Fatalf("a diff of exactly MaxBytes: %v", err)
	}
}
