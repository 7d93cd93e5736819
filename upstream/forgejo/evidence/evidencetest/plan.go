package evidencetest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
)

// plan is an entity ready to write: the metadata rendered around the place
// where the base64 stream goes, and the faults the stream needs.
type plan struct {
	dataFirst, spaced              bool
	trailing                       string
	truncate, truncateBy           int64
	ops                            []op
	wrongSHA, wrongCount           bool
	corruptAt, invalidAt, escapeAt int64
	lineBreaks, urlAlphabet        bool
	padBits, badPadding            bool

	// Filled by build.
	prefix, suffix []byte // entity bytes before and after the base64
	streams        bool   // whether the diff is written at all
	byteCount      int64  // length of the diff stream
}

// node is a member of the metadata tree.
type node struct {
	name  string
	raw   string  // a scalar value's JSON
	kids  []*node // an object's members
	obj   bool
	isRaw bool // data: the streamed base64 goes here
}

func scalar(name, raw string) *node           { return &node{name: name, raw: raw} }
func object(name string, kids ...*node) *node { return &node{name: name, obj: true, kids: kids} }

func jstr(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func jint(n int64) string      { return strconv.FormatInt(n, 10) }
func jtime(t time.Time) string { return jstr(timestamp(t).Format(time.RFC3339Nano)) }
func jb64(b []byte) string     { return jstr(base64.StdEncoding.EncodeToString(b)) }

func jnullable(s string) string {
	if s == "" {
		return "null"
	}
	return jstr(s)
}

// tree spells e out in the shape and member order of
// docs/architecture.md#evidence-entity, "data" last.
func (p *plan) tree(e Entity) *node {
	fork := "null"
	if e.ForkRepositoryID != 0 {
		fork = jint(e.ForkRepositoryID)
	}
	count, sum := e.ByteCount, e.SHA256
	if p.wrongCount {
		count++
	}
	if p.wrongSHA {
		sum = flipHex(sum)
	}
	return object("",
		scalar("schema", jstr(evidence.Schema)),
		object("repository", scalar("id", jint(e.RepositoryID)), scalar("owner", jstr(e.Owner)), scalar("name", jstr(e.Name))),
		object("pull_request", scalar("id", jint(e.PullRequestID)), scalar("index", jint(e.Index))),
		scalar("object_format", jstr(e.objectFormat())),
		object("generation",
			scalar("profile", jstr(evidence.Profile)),
			object("base", scalar("repository_id", jint(e.BaseRepositoryID)), scalar("oid", jstr(e.BaseOID)), scalar("source", jstr(evidence.BaseSource))),
			object("head", scalar("repository_id", jint(e.HeadRepositoryID)), scalar("oid", jstr(e.HeadOID)), scalar("ref", jstr(e.headRef()))),
			scalar("captured_at", jtime(e.CapturedAt)),
			scalar("generated_at", jtime(e.GeneratedAt)),
		),
		object("observations",
			object("target_tip",
				scalar("branch_b64", jb64(e.TargetBranch)),
				scalar("oid", jnullable(e.TargetOID)),
				scalar("status", jstr(e.targetStatus())),
				scalar("observed_at", jtime(e.TargetObservedAt)),
			),
			object("original_fork",
				scalar("repository_id", fork),
				scalar("branch_b64", jb64(e.ForkBranch)),
				scalar("resolution", jstr(evidence.ResolutionNotRead)),
				scalar("generation_input", "false"),
			),
		),
		object("content",
			scalar("media_type", jstr(evidence.MediaType)),
			scalar("encoding", jstr(evidence.ContentEncoding)),
			scalar("byte_count", jint(count)),
			scalar("sha256", jstr(sum)),
		),
		&node{name: "data", isRaw: true},
	)
}

// flipHex changes the first hex digit, so the result is still well formed.
func flipHex(s string) string {
	if s == "" {
		return "0"
	}
	c := byte('0')
	if s[0] == '0' {
		c = '1'
	}
	return string(c) + s[1:]
}

// find returns the parent of the member at a dotted path and its index
// there; the empty path is the root itself (index -1).
func find(root *node, path string) (*node, int, error) {
	if path == "" {
		return root, -1, nil
	}
	parent := root
	names := strings.Split(path, ".")
	for i, name := range names {
		idx := -1
		for j, k := range parent.kids {
			if k.name == name {
				idx = j
				break
			}
		}
		if idx < 0 || !parent.obj {
			return nil, 0, fmt.Errorf("evidencetest: no member %q", path)
		}
		if i == len(names)-1 {
			return parent, idx, nil
		}
		parent = parent.kids[idx]
	}
	panic("unreachable")
}

func (p *plan) apply(root *node) error {
	if p.dataFirst {
		last := len(root.kids) - 1
		root.kids = append([]*node{root.kids[last]}, root.kids[:last]...)
	}
	for _, o := range p.ops {
		parent, i, err := find(root, o.path)
		if err != nil {
			return err
		}
		switch o.kind {
		case opOverride:
			if i < 0 {
				return fmt.Errorf("evidencetest: cannot override the entity itself")
			}
			parent.kids[i] = scalar(parent.kids[i].name, o.raw)
		case opRemove:
			if i < 0 {
				return fmt.Errorf("evidencetest: cannot remove the entity itself")
			}
			parent.kids = append(parent.kids[:i:i], parent.kids[i+1:]...)
		case opDuplicate:
			if i < 0 {
				return fmt.Errorf("evidencetest: cannot duplicate the entity itself")
			}
			dup := clone(parent.kids[i])
			rest := append([]*node{dup}, parent.kids[i+1:]...)
			parent.kids = append(parent.kids[:i+1:i+1], rest...)
		case opExtra:
			target := parent
			if i >= 0 {
				target = parent.kids[i]
			}
			if !target.obj {
				return fmt.Errorf("evidencetest: %q is not an object", o.path)
			}
			target.kids = append(target.kids, scalar("x_unknown", "1"))
		}
	}
	return nil
}

func clone(n *node) *node {
	if n.isRaw {
		return scalar(n.name, `""`)
	}
	c := *n
	c.kids = make([]*node, len(n.kids))
	for i, k := range n.kids {
		c.kids[i] = clone(k)
	}
	return &c
}

// render writes root into p.prefix, or, once the data member has started,
// into p.suffix.
func (p *plan) render(root *node) {
	var b bytes.Buffer
	p.renderNode(&b, root, 0)
	if !p.streams {
		p.prefix = b.Bytes()
	} else {
		p.suffix = b.Bytes()
	}
}

func (p *plan) renderNode(b *bytes.Buffer, n *node, depth int) {
	if !n.obj {
		b.WriteString(n.raw)
		return
	}
	b.WriteByte('{')
	for i, k := range n.kids {
		if i > 0 {
			b.WriteByte(',')
		}
		if p.spaced {
			b.WriteString("\n" + strings.Repeat("\t", depth+1))
		}
		b.WriteString(jstr(k.name))
		b.WriteByte(':')
		if p.spaced {
			b.WriteByte(' ')
		}
		if k.isRaw {
			b.WriteByte('"')
			p.prefix = bytes.Clone(b.Bytes())
			p.streams = true
			b.Reset()
			b.WriteByte('"')
			continue
		}
		p.renderNode(b, k, depth+1)
	}
	if p.spaced {
		b.WriteString("\n" + strings.Repeat("\t", depth))
	}
	b.WriteByte('}')
}

// build checks that the options apply to e and renders the metadata.
func build(e Entity, opts []Option) (*plan, error) {
	p := &plan{truncate: -1, truncateBy: -1, corruptAt: -1, invalidAt: -1, escapeAt: -1}
	for _, o := range opts {
		o(p)
	}
	n := e.ByteCount
	if n < 0 {
		return nil, fmt.Errorf("evidencetest: negative ByteCount")
	}
	for _, at := range []int64{p.corruptAt, p.invalidAt, p.escapeAt} {
		if at >= n {
			return nil, fmt.Errorf("evidencetest: fault offset %d is beyond a %d-byte diff", at, n)
		}
	}
	if p.padBits && n%3 == 0 {
		return nil, fmt.Errorf("evidencetest: NonZeroPadBits needs a diff length that is not a multiple of 3")
	}
	root := p.tree(e)
	if err := p.apply(root); err != nil {
		return nil, err
	}
	p.render(root)
	if p.streams {
		p.suffix = append(p.suffix, p.trailing...)
	} else {
		p.prefix = append(p.prefix, p.trailing...)
	}
	p.byteCount = n
	if p.truncateBy >= 0 {
		cut := max(0, p.fullLen()-p.truncateBy)
		if p.truncate < 0 || cut < p.truncate {
			p.truncate = cut
		}
	}
	return p, nil
}

// fullLen is the untruncated entity length.
func (p *plan) fullLen() int64 {
	return int64(len(p.prefix)) + p.dataLen() + int64(len(p.suffix))
}

// dataLen is the exact length of the written base64 text.
func (p *plan) dataLen() int64 {
	if !p.streams {
		return 0
	}
	n := p.byteCount
	l := (n + 2) / 3 * 4
	if p.badPadding {
		if n%3 == 0 {
			l += 2
		} else {
			l -= 3 - n%3
		}
	}
	var extra int64
	if p.lineBreaks && l > 0 {
		extra += 2 * ((l - 1) / 76)
	}
	if p.escapeAt >= 0 {
		extra += 5
	}
	return l + extra
}
