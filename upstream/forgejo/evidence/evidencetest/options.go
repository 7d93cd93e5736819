package evidencetest

// Option changes how an entity is written: a layout variant (DataFirst,
// Spaced, Trailing) or a fault the verifier must refuse.
type Option func(*plan)

// op is a change to the metadata tree, applied in option order.
type op struct {
	kind opKind
	path string
	raw  string
}

type opKind uint8

const (
	opOverride opKind = iota
	opRemove
	opDuplicate
	opExtra
)

// DataFirst writes "data" as the first member, before "content" and every
// other member: valid, and the hardest order for a streaming verifier.
func DataFirst() Option { return func(p *plan) { p.dataFirst = true } }

// Spaced writes the metadata with whitespace between tokens (newlines, tabs
// and spaces): valid JSON, still a valid entity.
func Spaced() Option { return func(p *plan) { p.spaced = true } }

// Trailing appends s after the closing brace. JSON whitespace keeps the
// entity valid; anything else is the trailing-bytes fault.
func Trailing(s string) Option { return func(p *plan) { p.trailing = s } }

// TruncateTo cuts the entity after its first n bytes: the truncated-JSON
// fault (the entity cut inside "data" when n falls there).
func TruncateTo(n int64) Option { return func(p *plan) { p.truncate = n } }

// TruncateBy cuts the last k bytes of the entity: a valid prefix with its
// closure (or more) missing.
func TruncateBy(k int64) Option { return func(p *plan) { p.truncateBy = k } }

// Override replaces the value at a dotted member path ("repository.id",
// "data") with raw, which is written verbatim (e.g. `"42"`, `4.2e1`,
// `null`, `{}`): wrong JSON types, wrong schema or profile strings, escapes.
func Override(path, raw string) Option {
	return func(p *plan) { p.ops = append(p.ops, op{kind: opOverride, path: path, raw: raw}) }
}

// Remove leaves out the member at a dotted path: the missing-member fault.
func Remove(path string) Option {
	return func(p *plan) { p.ops = append(p.ops, op{kind: opRemove, path: path}) }
}

// Duplicate writes the member at a dotted path twice, the copy right after
// the original: the duplicate-member fault at any level. A duplicate of
// "data" is written as "data":"" (the stream is read once).
func Duplicate(path string) Option {
	return func(p *plan) { p.ops = append(p.ops, op{kind: opDuplicate, path: path}) }
}

// Extra adds the unknown member "x_unknown":1 at the end of the object at a
// dotted path ("" for the entity itself).
func Extra(objectPath string) Option {
	return func(p *plan) { p.ops = append(p.ops, op{kind: opExtra, path: objectPath}) }
}

// WrongSHA256 announces a content.sha256 one hex digit off from the diff's.
func WrongSHA256() Option { return func(p *plan) { p.wrongSHA = true } }

// WrongByteCount announces a content.byte_count one more than the diff's.
func WrongByteCount() Option { return func(p *plan) { p.wrongCount = true } }

// CorruptByteAt flips the lowest bit of the diff byte at offset off before
// encoding: canonical base64 of different bytes, caught only by the whole
// hash (late corruption after a valid prefix).
func CorruptByteAt(off int64) Option { return func(p *plan) { p.corruptAt = off } }

// InvalidCharAt writes '*' for the first base64 character of the quantum
// that holds diff byte off: a bad character after a valid prefix.
func InvalidCharAt(off int64) Option { return func(p *plan) { p.invalidAt = off } }

// EscapedCharAt writes the first base64 character of the quantum that holds
// diff byte off as a JSON \u escape: the same JSON string, non-canonical
// evidence.
func EscapedCharAt(off int64) Option { return func(p *plan) { p.escapeAt = off } }

// LineBreaks breaks the base64 into 76-character lines with JSON "\n"
// escapes, as MIME encoders do.
func LineBreaks() Option { return func(p *plan) { p.lineBreaks = true } }

// URLAlphabet encodes with the URL-safe alphabet ('-' and '_'); it shows only
// when the diff's base64 holds '+' or '/'.
func URLAlphabet() Option { return func(p *plan) { p.urlAlphabet = true } }

// NonZeroPadBits sets a pad bit in the final, padded quantum. The diff length
// must not be a multiple of 3 (else there is no padding).
func NonZeroPadBits() Option { return func(p *plan) { p.padBits = true } }

// BadPadding drops the final quantum's '=' padding, or, when the diff length
// is a multiple of 3, appends "==".
func BadPadding() Option { return func(p *plan) { p.badPadding = true } }
