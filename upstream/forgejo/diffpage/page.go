// Package diffpage is the wire shape of one get_pull_request_diff result
// (docs/tools.md, docs/architecture.md#pr-diff-contract). The gateway's tool
// writes it and the diff reader (server/diffread, `agent-gateway diff`) reads
// it; one type for both keeps the writer and the reader from drifting apart
// member by member.
package diffpage

import "encoding/json"

// EnvelopeLimit is the most bytes the complete JSON-RPC response to one
// get_pull_request_diff call may have (docs/architecture.md#page-fitting):
// the tool fits every page under it, and the reader refuses a response over
// it.
const EnvelopeLimit = 49000

// Requested is the pull request a page says it was asked for.
type Requested struct {
	Owner string `json:"owner"`
	Repo  string `json:"repo"`
	Index int64  `json:"index"`
}

// Page is one result of get_pull_request_diff, members in the documented
// order. As read, nothing in it is trusted until a diffread.Verifier has
// checked it.
type Page struct {
	Requested              Requested       `json:"requested"`
	Manifest               json.RawMessage `json:"manifest"`
	Contract               string          `json:"contract"`
	AtomicLatestPRSnapshot bool            `json:"atomic_latest_pr_snapshot"`
	ByteOffset             int64           `json:"byte_offset"`
	ChunkBytes             int64           `json:"chunk_bytes"`
	Encoding               string          `json:"encoding"`
	Data                   string          `json:"data"`
	ChunkSHA256            string          `json:"chunk_sha256"`
	Text                   *string         `json:"text"`
	WholeDiffVerified      bool            `json:"whole_diff_verified"`
	EOF                    bool            `json:"eof"`
	NextByteOffset         int64           `json:"next_byte_offset"`
	NextCursor             *string         `json:"next_cursor"`
}
