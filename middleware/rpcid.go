package middleware

import (
	"encoding/json"
	"strconv"
)

// maxSafeID is the largest integer every JSON reader holds exactly
// (2^53 − 1): the SDK decodes numeric ids into int64 or float64 and
// re-encodes them, so a larger one came back altered (9007199254740993 →
// …992) and a caller could not match the answer to its request.
const maxSafeID = 1<<53 - 1

// checkID says why a JSON-RPC request id is refused, or "" to accept it.
// Accepted: a string, or an integer written plainly (no fraction, no
// exponent, not -0) within ±(2^53 − 1). Everything else (1.5, 1e3, -0,
// 9007199254740993, true, {} …) the SDK would answer with a different id
// than was sent, so it is refused with -32600 before the SDK sees it
// (docs/architecture.md#strict-json,
// docs/tools.md#http-level-refusals-all-endpoints).
func checkID(id json.RawMessage) string {
	if len(id) == 0 {
		return ""
	}
	switch id[0] {
	case '"':
		return ""
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.ParseInt(string(id), 10, 64)
		switch {
		case err != nil && isInteger(id):
			return "the request id is out of range: integer ids must be within ±9007199254740991"
		case err != nil:
			return "the request id must be a string or an integer (no fraction or exponent)"
		case string(id) == "-0":
			return "the request id must be a string or an integer (not -0)"
		case n > maxSafeID || n < -maxSafeID:
			return "the request id is out of range: integer ids must be within ±9007199254740991"
		}
		return ""
	}
	return "the request id must be a string or an integer"
}

// isInteger reports whether a JSON number is written as an integer.
func isInteger(num []byte) bool {
	if len(num) > 0 && num[0] == '-' {
		num = num[1:]
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(num) > 0
}
