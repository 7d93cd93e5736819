package githubemu

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Docs is a seeded documents repository: one commit holding every case the
// documents toolset must handle, and the content of its regular files.
type Docs struct {
	Owner, Repo    string
	InstallationID int64
	Commit         string
	// Files maps the path of each regular file to its content.
	Files map[string][]byte

	// Paths of the interesting cases.
	Runtime        string // a > 64 KiB UTF-8 document mixing 1- to 4-byte characters
	Readme         string // a small ASCII file
	Odd            string // a file whose path needs escaping (space, '#', '?', '%', non-ASCII)
	Escapes        string // UTF-8 text of everything a JSON string escapes (EscapesDocument)
	Empty          string // an empty file
	Dir            string // a directory
	LinkToFile     string // a symlink to Readme (GitHub answers with Readme)
	LinkOutside    string // a symlink pointing outside the repository
	Submodule      string // a gitlink
	NotUTF8        string // Latin-1 bytes, not UTF-8
	MaxSize        string // exactly 1 MiB of UTF-8
	TooLarge       string // 1 MiB + 1 bytes
	MissingUnicode string // a path that does not exist
}

// SeedDocs creates owner/repo with one commit of every case, registers
// installationID for it and returns what it made.
func (e *Emulator) SeedDocs(owner, repo string, installationID int64) (*Docs, error) {
	d := &Docs{
		Owner: owner, Repo: repo, InstallationID: installationID, Files: map[string][]byte{},
		Runtime:        "docs/CONTINUITY_PROTOCOL.md",
		Readme:         "README.md",
		Odd:            "docs/notes on #1?  100% ünïcödé.md",
		Escapes:        "docs/escapes.md",
		Empty:          "docs/empty.md",
		Dir:            "docs",
		LinkToFile:     "docs/readme-link.md",
		LinkOutside:    "docs/escape",
		Submodule:      "vendor/lib",
		NotUTF8:        "docs/latin1.txt",
		MaxSize:        "data/max.txt",
		TooLarge:       "data/too-large.txt",
		MissingUnicode: "docs/absent-ü.md",
	}
	files := map[string][]byte{
		d.Runtime:  MultiByteDocument(200 << 10),
		d.Readme:   []byte("# Docs fixture\n\nA small ASCII file.\n"),
		d.Odd:      []byte("Odd path, ordinary UTF-8 text: grüße, 日本.\n"),
		d.Escapes:  []byte(EscapesDocument),
		d.Empty:    {},
		d.NotUTF8:  []byte("caf\xe9 cr\xe8me br\xfbl\xe9e\n"),
		d.MaxSize:  bytes.Repeat([]byte("0123456789abcdef"), MaxBlobBytes/16),
		d.TooLarge: append(bytes.Repeat([]byte("0123456789abcdef"), MaxBlobBytes/16), '\n'),
	}
	var entries []Entry
	for p, c := range files {
		entries = append(entries, Entry{Path: p, Content: c})
		d.Files[p] = c
	}
	entries = append(entries,
		Entry{Path: d.LinkToFile, Mode: ModeSymlink, Content: []byte("../README.md")},
		Entry{Path: d.LinkOutside, Mode: ModeSymlink, Content: []byte("../../../etc/passwd")},
		Entry{Path: d.Submodule, Mode: ModeGitlink, Commit: strings.Repeat("5ab", 13) + "5"},
	)
	if err := e.CreateRepository(owner, repo); err != nil {
		return nil, err
	}
	commit, err := e.Commit(owner, repo, "main", "Seed the documents fixture", entries)
	if err != nil {
		return nil, err
	}
	d.Commit = commit
	e.AddInstallation(installationID, owner+"/"+repo)
	return d, nil
}

// EscapesDocument is well-formed UTF-8 holding every kind of character a
// JSON string escapes, which a fragment's text is escaped for twice on
// its way into an answer: quotes, backslashes, each named and some
// numbered control characters, HTML ('<', '>', '&'), U+2028 and U+2029,
// beside what passes as it is (DEL, multi-byte characters, text that
// reads like an escape).
const EscapesDocument = "# \"Quoted\" <b>HTML</b> & C:\\path\\to\\file\n" +
	"tab\there, cr\r, bs\b, ff\f, nul \x00, soh \x01, us \x1f, del \x7f\n" +
	"line\u2028separator, paragraph\u2029separator, <script>alert('&amp;')</script>\n" +
	"grüße — 日本語 — 😀𝄞, \\u0041 is not an escape here, nor \\\"\n"

// MultiByteDocument returns size bytes (or slightly fewer, ending on a
// character) of UTF-8 text mixing 1-, 2-, 3- and 4-byte characters in a
// pattern whose period does not divide 1024, so fragment ends of common
// sizes fall inside characters; byte 65536, the end of a first full
// fragment, always does.
func MultiByteDocument(size int) []byte {
	for pad := 0; pad < 8; pad++ {
		out := multiByte(size, pad)
		if len(out) <= 65536 || !utf8.RuneStart(out[65536]) {
			return out
		}
	}
	return multiByte(size, 0)
}

func multiByte(size, pad int) []byte {
	line := []byte("Zeile äöü ß — 日本語のテキスト — emoji 😀𝄞 — ascii tail xyz\n")
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(strings.Repeat("=", pad))
	for n := 0; b.Len() < size; n++ {
		b.WriteString("#")
		b.WriteString(strings.Repeat("é", n%7))
		b.Write(line)
	}
	out := b.Bytes()[:size]
	for len(out) > 0 && !utf8.Valid(out) {
		out = out[:len(out)-1]
	}
	return out
}
