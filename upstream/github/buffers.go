package github

import "sync"

// A document read holds two large buffers: the Contents answer (the file
// in base64, about 4/3 of it) and the decoded file. Left to the
// collector, the two were about 490 KB of a 200 KiB document's 750 KB of
// garbage a fragment, and under the gateway's soft memory limit
// (runtime.memory_limit) the collector ran about once every nine
// fragments (docs/performance.md, "Contents buffers"). They are reused
// instead, each with one owner at a time:
//
//   - the answer's buffer belongs to getFile, which gives it back once
//     parseFile returned: nothing parseFile returns aliases the answer
//     (the decoded file has its own buffer, every string is copied);
//   - the decoded file's buffer belongs to the File until File.Release,
//     which its reader calls when it keeps no byte of Content any more.
//
// A buffer from the pool is written from its start before it is read,
// and File.Content is clipped to its length, so no byte of one read is
// ever seen by another. TestBuffersReused holds the reads to their own
// bytes, and documents' TestFragmentKeepsNoContent holds its reader to
// answering copies only.

// maxPooledBuffer is the largest buffer kept for reuse: the answer of a
// file of about 380 KiB. The larger reads, up to MaxContentsResponse, are
// rare and left to the collector, so the pool never holds memory the
// gateway's RSS bound needs for them.
const maxPooledBuffer = 512 << 10

var fileBuffers = sync.Pool{New: func() any { return new([]byte) }}

// getBuffer returns an empty buffer, with room left by an earlier read
// when there is one.
func getBuffer() *[]byte {
	p := fileBuffers.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// putBuffer gives a buffer back; the caller keeps no slice of it.
func putBuffer(p *[]byte) {
	if p == nil || cap(*p) == 0 || cap(*p) > maxPooledBuffer {
		return
	}
	*p = (*p)[:0]
	fileBuffers.Put(p)
}
