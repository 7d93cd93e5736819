package evidence

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// malformed is the evidence_malformed refusal. Callers pass only member
// paths and fixed words as arguments, never entity values.
func malformed(format string, args ...any) *toolerr.Error {
	return toolerr.New(toolerr.EvidenceMalformed, format, args...)
}

func tooLarge() *toolerr.Error {
	return toolerr.New(toolerr.EvidenceMetadataTooLarge,
		"evidence metadata exceeds %d bytes", MaxMetadataBytes)
}

// readFailure maps an error of the underlying reader (see the package
// documentation); where names the part of the entity being read.
func readFailure(err error, where string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return toolerr.Wrap(err, toolerr.EvidenceMalformed, "truncated entity %s", where)
	}
	var te *toolerr.Error
	if errors.As(err, &te) {
		return te
	}
	return toolerr.Wrap(err, toolerr.UpstreamUnavailable, "reading the evidence entity failed")
}

// quoteName quotes a member name or path for a message. Names come from the
// entity, so they are escaped and cut short.
func quoteName(name string) string {
	const max = 64
	if len(name) > max {
		return strconv.Quote(name[:max]) + "…"
	}
	return strconv.Quote(name)
}

func member(path string) string { return fmt.Sprintf("member %s", quoteName(path)) }
