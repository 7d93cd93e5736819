package audit

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// checkpointMessage is what a checkpoint's signature covers: the format,
// writer, count, chain head and time, one per line.
func checkpointMessage(writer string, seq int64, head string, at time.Time) []byte {
	return []byte("agent-gateway audit checkpoint v1\n" + writer + "\n" + strconv.FormatInt(seq, 10) + "\n" +
		head + "\n" + at.UTC().Format(time.RFC3339Nano) + "\n")
}

// signCheckpoint returns the signed checkpoint of writer's chain at seq,
// whose head is the hash of record seq.
func signCheckpoint(key ed25519.PrivateKey, writer string, seq int64, head string, at time.Time) store.AuditCheckpoint {
	at = at.UTC().Truncate(time.Microsecond)
	sig := ed25519.Sign(key, checkpointMessage(writer, seq, head, at))
	return store.AuditCheckpoint{
		Writer: writer, Seq: seq, Head: head, At: at,
		KeyID:     KeyID(key.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(sig),
	}
}

// checkSignature reports whether cp is signed by pub.
func checkSignature(pub ed25519.PublicKey, cp store.AuditCheckpoint) bool {
	sig, err := base64.StdEncoding.DecodeString(cp.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(pub, checkpointMessage(cp.Writer, cp.Seq, cp.Head, cp.At), sig)
}
