package githubemu

import "sync"

// objectCache keeps what git said about objects named by their IDs, which
// never changes: whether a commit exists, the entry at a path of a commit,
// a blob's content and its base64 lines. Each Contents request ran three
// git processes (cat-file -t, ls-tree, cat-file blob) and a base64 pass;
// on the two shared cores of the load machine that was about 5 ms of CPU
// a document read, beside the gateway whose CPU the load program measures
// (docs/performance.md, "The emulator's git cache"). What a request sees
// is unchanged: every answer is still made from the repository's objects,
// only not read again. A branch name is resolved afresh every time.
type objectCache struct {
	mu      sync.Mutex
	commits map[string]bool       // dir + commit ID: a commit (only found ones are kept)
	entries map[string]*treeEntry // dir + commit ID + path: the entry, nil when absent
	blobs   map[string][]byte     // dir + blob ID: the content
	lines   map[string]string     // dir + blob ID: Base64Lines of the content
}

func cacheKey(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(append(b, p...), 0)
	}
	return string(b)
}

// cached returns m's value for key, or computes it with load and keeps it
// when keep says it may be kept.
func cached[V any](c *objectCache, m *map[string]V, key string, load func() (V, error), keep func(V) bool) (V, error) {
	c.mu.Lock()
	v, ok := (*m)[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := load()
	if err != nil || !keep(v) {
		return v, err
	}
	c.mu.Lock()
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[key] = v
	c.mu.Unlock()
	return v, nil
}

func always[V any](V) bool { return true }
