package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// BenchmarkPullDiff20MB serves pages of a 20 MB diff through the real
// gateway binary, built without the race detector (whose shadow memory
// would swamp the figure), and reports:
//
//   - peak-RSS-MB: the gateway process's VmHWM from /proc/<pid>/status
//     after every page was served (target ≤ 40 MB);
//   - idle-RSS-MB: its VmRSS before the first page, for scale;
//   - end-anon-RSS-MB and end-file-RSS-MB: RssAnon and RssFile after the
//     last page, which split the resident set into the process's own
//     memory and the binary's mapped pages;
//   - min-page-fill and mean-page-fill over the pages that are not the
//     last: chunk bytes over the largest window of the same kind (with
//     text, or data only) that would fit the 49,000-byte envelope, found
//     by re-rendering the actual page with longer chunks and measuring
//     the change in its JSON-RPC response (target ≥ 0.95);
//   - max-response-bytes: the largest JSON-RPC response seen;
//   - verified-MB/s: diff megabytes fetched and verified per second, each
//     page costing the whole diff (most of the time is the emulator running
//     git diff twice per page);
//   - gateway-CPU-ms/page: the gateway process's user+system CPU time per
//     page, from /proc/<pid>/stat;
//   - mean-chunk-bytes: diff bytes per page that is not the last.
//
// Each iteration is one page. The pages are read in order from the start;
// one more page, the last, is read through a cursor made for its offset.
//
//	go test ./test/e2e/ -run '^$' -bench BenchmarkPullDiff20MB -benchtime 20x
func BenchmarkPullDiff20MB(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc/<pid>/status")
	}
	bin := buildPlainBinary(b)
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { emu.Close() })
	r, err := emu.CreateRepo("bench", "big", forgejoemu.RepoOptions{Private: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Commit("main", map[string][]byte{"README.md": []byte("big\n")}, nil, "init"); err != nil {
		b.Fatal(err)
	}
	var big bytes.Buffer
	for i := 0; big.Len() < 20<<20; i++ {
		fmt.Fprintf(&big, "line %08d: if (a < b && c > d) { s = \"generated\\tdiff\"; } // 20 MB diff\n", i)
	}
	p := addPullWithFiles(b, emu, "bench", "big", "topic/big", map[string][]byte{"data/generated.txt": big.Bytes()})
	want := gitDiff(b, emu, "bench", "big", p)
	token := emu.IssueToken("bench", "read:repository")

	proc := startPlainGateway(b, bin, map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL()})
	idle := procStatusKB(b, proc.Process.Pid, "VmRSS")
	s, rec := measuredSession(b, proc.url+"/mcp/forgejo", token)
	args := map[string]any{"owner": "bench", "repo": "big", "index": p.Index()}

	var pages, fullPages, chunkSum int
	minFill, sumFill, maxResp := 1.0, 0.0, 0
	var lastCursor string
	page := func(args map[string]any) *diffPage {
		pg, out := callDiff(b, s, args)
		if pg == nil {
			b.Fatalf("page %d: %v", pages, out)
		}
		chunk := checkPage(b, pg)
		if !bytes.Equal(chunk, want[pg.ByteOffset:pg.ByteOffset+int64(len(chunk))]) {
			b.Fatalf("page at %d differs from git's diff", pg.ByteOffset)
		}
		size := rec.last()
		maxResp = max(maxResp, size)
		if size > forgejotools.EnvelopeLimit {
			b.Fatalf("response of %d bytes", size)
		}
		if !pg.EOF {
			f := pageFillOnWire(b, pg, size, want)
			minFill = min(minFill, f)
			sumFill += f
			fullPages++
			chunkSum += pg.ChunkBytes
			lastCursor = *pg.NextCursor
		}
		pages++
		return pg
	}
	cpu0 := procCPU(b, proc.Process.Pid)
	start := time.Now()
	for b.Loop() {
		pg := page(args)
		if pg.EOF {
			delete(args, "cursor")
		} else {
			args["cursor"] = *pg.NextCursor
		}
	}
	// The last page, through a cursor for its offset: a cursor is a hint
	// any caller may make, and the gateway verifies the whole diff anyway.
	c, err := forgejotools.DecodeDiffCursor(lastCursor)
	if err != nil {
		b.Fatal(err)
	}
	c.Offset = c.ByteCount - 1000
	if pg := page(map[string]any{"owner": "bench", "repo": "big", "index": p.Index(), "cursor": c.Encode()}); !pg.EOF {
		b.Fatal("the last page is not eof")
	}
	elapsed := time.Since(start)
	cpu := procCPU(b, proc.Process.Pid) - cpu0
	peak := procStatusKB(b, proc.Process.Pid, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
	b.ReportMetric(float64(idle)/1024, "idle-RSS-MB")
	// The kernel keeps no peak per kind, so these are read at the end:
	// file-backed pages are the binary's text and data mapped as code ran
	// (shared, reclaimable page cache); anonymous ones are the process's own.
	b.ReportMetric(float64(procStatusKB(b, proc.Process.Pid, "RssAnon"))/1024, "end-anon-RSS-MB")
	b.ReportMetric(float64(procStatusKB(b, proc.Process.Pid, "RssFile"))/1024, "end-file-RSS-MB")
	b.ReportMetric(minFill, "min-page-fill")
	b.ReportMetric(sumFill/float64(max(fullPages, 1)), "mean-page-fill")
	b.ReportMetric(float64(maxResp), "max-response-bytes")
	b.ReportMetric(float64(len(want))*float64(pages)/1e6/elapsed.Seconds(), "verified-MB/s")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(pages), "gateway-CPU-ms/page")
	b.ReportMetric(float64(chunkSum)/float64(max(fullPages, 1)), "mean-chunk-bytes")
	b.Logf("%d-byte diff, %d pages; gateway peak RSS %d KiB (idle %d KiB)", len(want), pages, peak, idle)
}

// pageFillOnWire returns the page's chunk bytes over the largest chunk of
// the same kind that would still fit: it rewrites the page's own result
// text with longer chunks (data, chunk_bytes, chunk_sha256, text,
// next_byte_offset, next_cursor) and measures the response's growth as the
// growth of the text's JSON escaping, starting from the response size seen
// on the wire. It shares no code with the gateway's fitter.
func pageFillOnWire(t testing.TB, pg *diffPage, size int, diff []byte) float64 {
	t.Helper()
	base := jsonStringLen(pg.raw)
	rest := diff[pg.ByteOffset:min(int64(len(diff)), pg.ByteOffset+32<<10)]
	end := len(rest)
	if pg.Text != nil {
		// Longer pages with text end on a character boundary before the
		// first byte that is not UTF-8.
		end = 0
		for end < len(rest) {
			r, n := utf8.DecodeRune(rest[end:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			end += n
		}
	}
	best := pg.ChunkBytes
	for m := pg.ChunkBytes + 1; m <= end; m++ {
		if pg.Text != nil && !utf8.Valid(rest[:m]) {
			continue
		}
		if size-base+jsonStringLen(rewritePage(t, pg, rest[:m])) > forgejotools.EnvelopeLimit {
			break
		}
		best = m
	}
	return float64(pg.ChunkBytes) / float64(best)
}

var (
	reChunkBytes = regexp.MustCompile(`,"chunk_bytes":\d+,`)
	reData       = regexp.MustCompile(`,"data":"[A-Za-z0-9+/=]*",`)
	reChunkSum   = regexp.MustCompile(`,"chunk_sha256":"[0-9a-f]{64}",`)
	reText       = regexp.MustCompile(`,"text":(null|"(?:[^"\\]|\\.)*"),`)
	reNext       = regexp.MustCompile(`,"next_byte_offset":\d+,`)
	reCursor     = regexp.MustCompile(`,"next_cursor":"[^"]*"}$`)
)

// rewritePage returns the page's text with chunk as its chunk.
func rewritePage(t testing.TB, pg *diffPage, chunk []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(chunk)
	txt := "null"
	if utf8.Valid(chunk) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(string(chunk))
		txt = strings.TrimSuffix(b.String(), "\n")
	}
	c, err := forgejotools.DecodeDiffCursor(*pg.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	c.Offset = pg.ByteOffset + int64(len(chunk))
	out := pg.raw
	for _, r := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{reChunkBytes, `,"chunk_bytes":` + strconv.Itoa(len(chunk)) + `,`},
		{reData, `,"data":"` + base64.StdEncoding.EncodeToString(chunk) + `",`},
		{reChunkSum, `,"chunk_sha256":"` + hex.EncodeToString(sum[:]) + `",`},
		{reText, `,"text":` + txt + `,`},
		{reNext, `,"next_byte_offset":` + strconv.FormatInt(c.Offset, 10) + `,`},
		{reCursor, `,"next_cursor":"` + c.Encode() + `"}`},
	} {
		if len(r.re.FindAllIndex(out, -1)) != 1 {
			t.Fatalf("page text does not have exactly one %s", r.re)
		}
		out = r.re.ReplaceAllLiteral(out, []byte(r.with))
	}
	return out
}

// jsonStringLen is the length of text inside a JSON string as the SDK's
// text content writes it (json.Marshal: HTML-escaped), quotes excluded.
func jsonStringLen(text []byte) int {
	b, _ := json.Marshal(string(text))
	return len(b) - 2
}

// buildPlainBinary builds agent-gateway without the race detector.
func buildPlainBinary(t testing.TB) string {
	t.Helper()
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agent-gateway")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// plainGateway is a gateway process started by startPlainGateway.
type plainGateway struct {
	*exec.Cmd
	url string
}

// startPlainGateway runs bin serve on a free port and waits for /healthz.
func startPlainGateway(t testing.TB, bin string, env map[string]string) *plainGateway {
	t.Helper()
	addr := gatewaytest.FreeAddr(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "AGENT_GATEWAY_LISTEN="+addr, "AGENT_GATEWAY_DATA_DIR="+t.TempDir())
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	g := &plainGateway{Cmd: cmd, url: "http://" + addr}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(g.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return g
			}
		}
	}
	t.Fatal("the gateway did not become healthy")
	return nil
}

// procCPU returns a process's user plus system CPU time from
// /proc/<pid>/stat (in clock ticks of 1/100 s, as on every Linux build the
// tests run on).
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("cannot read /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStatusKB reads a "<key>: <n> kB" line of /proc/<pid>/status.
func procStatusKB(t testing.TB, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
