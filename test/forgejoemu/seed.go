package forgejoemu

import (
	"fmt"
)

// Demo names what SeedDemo created, for the demo command and tests.
type Demo struct {
	// Owner owns both repositories.
	Owner string
	// PublicRepo is the public repository's name ("gateway").
	PublicRepo string
	// PrivateRepo is the private repository's name.
	PrivateRepo string
	// Reader is a user who collaborates (read) on the private repository.
	Reader string
	// ReaderToken is Reader's token: read:repository and write:issue.
	ReaderToken string
	// OwnerToken is Owner's token: write:repository, enough to approve a
	// grant through the emulator's approval route (grants_approve.go).
	OwnerToken string
	// Bot is a bot user (a user like any other) collaborating (write) on
	// the public repository.
	Bot string
	// BotToken is Bot's token: read:repository and write:issue.
	BotToken string
	// OpenPull is the index of an open pull request with a binary file, a
	// non-UTF-8 path, a rename and an edit.
	OpenPull int64
	// ClosedPull is the index of a closed, merged pull request.
	ClosedPull int64
	// EmptyPull is the index of an open pull request with an empty diff.
	EmptyPull int64
	// BinaryPath and NonUTF8Path are paths the open pull request adds.
	BinaryPath, NonUTF8Path string
}

// demoBinary is a small binary file: a PNG signature, NUL bytes and every
// byte value once, so diffs need git's binary patch format.
func demoBinary() []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for i := 0; i < 256; i++ {
		b = append(b, byte(i))
	}
	return b
}

// SeedDemo fills the emulator with a small sample: public demo/gateway with
// a few commits and three pull requests (open with binary, non-UTF-8 path and
// rename; closed and merged; open and empty), private demo/notes, and a
// reader and a bot with tokens.
func (e *Emulator) SeedDemo() (*Demo, error) {
	d := &Demo{
		Owner: "demo", PublicRepo: "gateway", PrivateRepo: "notes",
		Reader: "alice", Bot: "review-bot",
		BinaryPath: "assets/logo.bin", NonUTF8Path: "docs/caf\xe9.txt",
	}
	if err := e.seedDemo(d); err != nil {
		return nil, fmt.Errorf("forgejoemu: seed demo: %w", err)
	}
	return d, nil
}

func (e *Emulator) seedDemo(d *Demo) error {
	for _, login := range []string{d.Owner, d.Reader, d.Bot} {
		if _, err := e.AddUser(login); err != nil {
			return err
		}
	}
	pub, err := e.CreateRepo(d.Owner, d.PublicRepo, RepoOptions{Description: "Demo repository of the Forgejo emulator"})
	if err != nil {
		return err
	}
	steps := []struct {
		branch, from string
		files        map[string][]byte
		deletes      []string
		message      string
	}{
		{branch: "main", message: "Initial commit", files: map[string][]byte{
			"README.md":     []byte("# gateway\n\nA demo repository.\n"),
			"docs/guide.md": []byte("Guide\n=====\n\nRead the docs.\n"),
		}},
		{branch: "feature/assets", from: "main", message: "Add logo, Latin-1 notes, rename guide", files: map[string][]byte{
			d.BinaryPath:    demoBinary(),
			d.NonUTF8Path:   []byte("caf\xe9 au lait\n"), // Latin-1 content too
			"docs/GUIDE.md": []byte("Guide\n=====\n\nRead the docs.\n"),
			"README.md":     []byte("# gateway\n\nA demo repository with assets.\n"),
		}, deletes: []string{"docs/guide.md"}},
		{branch: "main", message: "Add a changelog", files: map[string][]byte{
			"CHANGELOG.md": []byte("## 0.1.0\n\n- First release.\n"),
		}},
		{branch: "fix/typo", from: "main", message: "Fix a typo", files: map[string][]byte{
			"CHANGELOG.md": []byte("## 0.1.0\n\n- First public release.\n"),
		}},
		{branch: "docs/empty", from: "main"},
	}
	for _, s := range steps {
		if s.from != "" {
			if err := pub.Branch(s.branch, s.from); err != nil {
				return err
			}
		}
		if s.message != "" {
			if _, err := pub.Commit(s.branch, s.files, s.deletes, s.message); err != nil {
				return err
			}
		}
	}
	pulls := []struct {
		index *int64
		opts  PullOptions
	}{
		{&d.OpenPull, PullOptions{Head: "feature/assets", Base: "main", Poster: d.Owner,
			Title: "Add assets", Body: "Adds a binary logo and a file whose name is Latin-1, and renames the guide."}},
		{&d.ClosedPull, PullOptions{Head: "fix/typo", Base: "main", Poster: d.Bot,
			Title: "Fix a typo in the changelog", Body: "Merged."}},
		{&d.EmptyPull, PullOptions{Head: "docs/empty", Base: "main", Poster: d.Reader,
			Title: "Nothing yet", Body: "A pull request whose diff is empty."}},
	}
	if err := e.AddCollaborator(d.Owner, d.PublicRepo, d.Bot, "write"); err != nil {
		return err
	}
	for _, p := range pulls {
		pr, err := e.CreatePull(d.Owner, d.PublicRepo, p.opts)
		if err != nil {
			return err
		}
		*p.index = pr.Index()
	}
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.ClosedPull, "closed", true); err != nil {
		return err
	}

	priv, err := e.CreateRepo(d.Owner, d.PrivateRepo, RepoOptions{Private: true, Description: "Private notes"})
	if err != nil {
		return err
	}
	if _, err := priv.Commit("main", map[string][]byte{"notes.md": []byte("Private notes.\n")}, nil, "Start notes"); err != nil {
		return err
	}
	if err := e.AddCollaborator(d.Owner, d.PrivateRepo, d.Reader, "read"); err != nil {
		return err
	}
	d.ReaderToken = e.IssueToken(d.Reader, "read:repository", "write:issue")
	d.BotToken = e.IssueToken(d.Bot, "read:repository", "write:issue")
	d.OwnerToken = e.IssueToken(d.Owner, "write:repository")
	return nil
}
