package evidence

// kind is the JSON type a member's value must have.
type kind uint8

const (
	kindObject kind = iota
	kindString
	kindNumber
	kindBool
)

func (k kind) String() string {
	switch k {
	case kindObject:
		return "an object"
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	default:
		return "a boolean"
	}
}

// field is one member of a fixed-shape object.
type field struct {
	name     string
	kind     kind
	nullable bool
	shape    shape // members of a kindObject field
}

// shape lists an object's members in the member order of
// docs/architecture.md#evidence-entity: the order the manifest uses. Every
// member is required; none other is allowed.
type shape []field

func (s shape) field(name string) *field {
	for i := range s {
		if s[i].name == name {
			return &s[i]
		}
	}
	return nil
}

// dataMember is the top-level member that carries the diff; it is parsed by
// the streaming decoder, never stored.
const dataMember = "data"

func str(name string) field          { return field{name: name, kind: kindString} }
func num(name string) field          { return field{name: name, kind: kindNumber} }
func obj(name string, s shape) field { return field{name: name, kind: kindObject, shape: s} }

// entityShape is forgejo.pr-diff-evidence.v1 without "data"
// (docs/architecture.md#evidence-entity).
var entityShape = shape{
	str("schema"),
	obj("repository", shape{num("id"), str("owner"), str("name")}),
	obj("pull_request", shape{num("id"), num("index")}),
	str("object_format"),
	obj("generation", shape{
		str("profile"),
		obj("base", shape{num("repository_id"), str("oid"), str("source")}),
		obj("head", shape{num("repository_id"), str("oid"), str("ref")}),
		str("captured_at"),
		str("generated_at"),
	}),
	obj("observations", shape{
		obj("target_tip", shape{
			str("branch_b64"),
			{name: "oid", kind: kindString, nullable: true},
			str("status"),
			str("observed_at"),
		}),
		obj("original_fork", shape{
			{name: "repository_id", kind: kindNumber, nullable: true},
			str("branch_b64"),
			str("resolution"),
			{name: "generation_input", kind: kindBool},
		}),
	}),
	obj("content", shape{str("media_type"), str("encoding"), num("byte_count"), str("sha256")}),
}

// Member describes one member of the manifest (Verified.Manifest), for a
// reader of get_pull_request_diff pages (server/diffread) that must hold a
// manifest to exactly the members the gateway writes: every member listed
// is present, no other is allowed, at every level.
type Member struct {
	Name string
	// Type is the JSON type of the value: "object", "string", "number" or
	// "boolean".
	Type string
	// Nullable says the value may also be null.
	Nullable bool
	// Members are an object's members, in the order the manifest writes
	// them.
	Members []Member
}

// ManifestMembers returns the manifest's members: entityShape, the shape
// the verifier reads and manifestOf writes, so that reader and writer
// cannot drift apart.
func ManifestMembers() []Member { return entityShape.members() }

func (s shape) members() []Member {
	out := make([]Member, len(s))
	for i, f := range s {
		out[i] = Member{Name: f.name, Type: jsonType[f.kind], Nullable: f.nullable}
		if f.kind == kindObject {
			out[i].Members = f.shape.members()
		}
	}
	return out
}

// jsonType names each kind as JSON does.
var jsonType = map[kind]string{kindObject: "object", kindString: "string", kindNumber: "number", kindBool: "boolean"}
