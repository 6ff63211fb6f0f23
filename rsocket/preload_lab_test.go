package rsocket

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// HTTP between our package and Python programs run under rdma-core's
// LD_PRELOAD library, in both roles, with the bytes checked by SHA-256.
//
// Python's own socket() asks for SOCK_STREAM|SOCK_CLOEXEC, which rsocket()
// refuses (ENOTSUP), and the preload then hands out a kernel TCP socket; its
// accept() is accept4(), which the preload does not intercept. So the
// scripts below take their sockets from the preload's socket() and accept()
// through ctypes, check that they got an rsocket (the preload backs each
// with an fd open on /dev/null), and wrap them in Python socket objects
// whose bind, listen, connect, send, recv and close the preload turns into
// rbind, rlisten, rconnect, rsend, rrecv and rclose. Our side speaks only
// rsocket, so an exchange that works went over rsocket.
//
// The preload's fork support (RDMAV_FORK_SAFE) would start each connection
// over TCP; it and the RS_* queue settings are removed from the environment,
// and the lab has no /etc/rdma/rsocket, so rsocket's defaults hold.

// preloadLib is librdmacm1's preload in the multiarch directory of the
// test binary's architecture (the arm64 lab runs an arm64 userland).
var preloadLib = "/usr/lib/" + map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH] + "/rsocket/librspreload.so"

// preloadCommon is the start of both scripts: rsocket() returns the fd of
// a new rsocket from the preload.
const preloadCommon = `import ctypes, hashlib, os, socket, sys, threading

libc = ctypes.CDLL(None, use_errno=True)

def check(fd, what):
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, what + ": " + os.strerror(e))
    return fd

def rsocket():
    fd = check(libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0), "socket")
    target = os.readlink("/proc/self/fd/%d" % fd)
    if target != "/dev/null":
        sys.exit("socket() gave %s, not an rsocket: is the preload loaded?" % target)
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0, fileno=fd)
`

// preloadServerPy serves the files of a directory and echoes POST bodies,
// over HTTP/1.1 with keep-alive: argv host port directory.
const preloadServerPy = preloadCommon + `
import http.server

class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Body-SHA256", hashlib.sha256(body).hexdigest())
        self.end_headers()
        self.wfile.write(body)

def serve(conn, root):
    try:
        Handler(conn, conn.getpeername(), None, directory=root)
    finally:
        conn.close()

host, port, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ls = rsocket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, port))
ls.listen(8)
while True:
    fd = check(libc.accept(ls.fileno(), None, None), "accept")
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0, fileno=fd)
    threading.Thread(target=serve, args=(conn, root), daemon=True).start()
`

// preloadClientPy GETs base/data and POSTs a file to base/echo with
// urllib, and prints what it got: argv base-URL file.
const preloadClientPy = preloadCommon + `
import urllib.request

def create_connection(address, *args, **kwargs):
    s = rsocket()
    try:
        s.connect(address)
    except BaseException:
        s.close()
        raise
    return s

socket.create_connection = create_connection

base, post = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(base + "/data") as r:
    got = r.read()
    print("GET", r.status, len(got), hashlib.sha256(got).hexdigest())
with open(post, "rb") as f:
    body = f.read()
req = urllib.request.Request(base + "/echo", data=body, method="POST",
                             headers={"Content-Type": "application/octet-stream"})
with urllib.request.urlopen(req) as r:
    got = r.read()
    print("POST", r.status, r.headers["X-Body-SHA256"], len(got), hashlib.sha256(got).hexdigest())
`

// preloadEnv is the environment of a program run under the preload.
func preloadEnv(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(preloadLib); err != nil {
		t.Fatalf("rdma-core's preload library is needed (Debian: librdmacm1): %v", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "LD_PRELOAD" || k == "RDMAV_FORK_SAFE" || k == "IBV_FORK_SAFE" || strings.HasPrefix(k, "RS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LD_PRELOAD="+preloadLib)
}

func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for this test: %v", err)
	}
	return p
}

// preloadContent is n bytes of deterministic content.
func preloadContent(n int, seed byte) []byte {
	var key [32]byte
	key[0] = seed
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tcpListening reports whether a kernel TCP socket listens on port.
func tcpListening(port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				return true
			}
		}
	}
	return false
}

// TestPreloadPythonServer: our net/http client against Python's
// http.server under the preload: a GET of 3 MiB and a POST of 1 MiB that
// comes back, on one kept-alive connection.
func TestPreloadPythonServer(t *testing.T) {
	ends := testutil.VethPair(t)
	py := python3(t)
	env := preloadEnv(t)
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	data := preloadContent(3<<20+1234, 1)
	post := preloadContent(1<<20+7, 2)
	if err := os.Mkdir(www, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "server.py")
	if err := os.WriteFile(script, []byte(preloadServerPy), 0o644); err != nil {
		t.Fatal(err)
	}
	portSeq++
	port := portSeq
	addr := fmt.Sprintf("%s:%d", ends[0].Addr, port)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var out, errOut testutil.SyncBuffer
	t.Cleanup(func() { t.Logf("python server:\n%s%s", &out, &errOut) })
	cmd := exec.Command(py, script, ends[0].Addr, strconv.Itoa(port), www)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
	exited := testutil.StartProcess(t, cmd)
	if err := testutil.WaitListening(ctx, port, true, exited); err != nil {
		t.Fatal(err)
	}
	if tcpListening(port) {
		t.Fatalf("a kernel TCP socket listens on port %d too: the python server is not on rsocket alone", port)
	}

	var mu sync.Mutex
	var conns []*Conn
	d := &Dialer{Options: Options{Logf: t.Logf}}
	tr := &http.Transport{
		// Dialer.DialContext as it is (http.Transport asks for "tcp"),
		// noting each connection so that the test closes it.
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, address)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			conns = append(conns, c.(*Conn))
			mu.Unlock()
			return c, nil
		},
		MaxConnsPerHost:    1,
		DisableCompression: true,
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}

	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/data.bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fetch(t, client, req)
	if len(got) != len(data) || sha256Hex(got) != sha256Hex(data) {
		t.Fatalf("GET: %d bytes, SHA-256 %s; the file has %d bytes, %s", len(got), sha256Hex(got), len(data), sha256Hex(data))
	}

	req, err = http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/echo", bytes.NewReader(post))
	if err != nil {
		t.Fatal(err)
	}
	got, hdr := fetch(t, client, req)
	if h := hdr.Get("X-Body-SHA256"); h != sha256Hex(post) {
		t.Errorf("POST: the server read a body with SHA-256 %s; sent %s", h, sha256Hex(post))
	}
	if !bytes.Equal(got, post) {
		t.Errorf("POST: the echo has %d bytes, SHA-256 %s; sent %d bytes, %s", len(got), sha256Hex(got), len(post), sha256Hex(post))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range conns {
		t.Logf("rsocket connection %v -> %v", c.LocalAddr(), c.RemoteAddr())
	}
	if len(conns) != 1 {
		t.Errorf("%d connections; want the GET and the POST on one kept-alive connection", len(conns))
	}
}

// fetch does req and returns the body and header of a 200 response.
func fetch(t *testing.T, client *http.Client, req *http.Request) ([]byte, http.Header) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", req.Method, req.URL, resp.Status, body)
	}
	return body, resp.Header
}

// trackingListener remembers every connection it accepted, so that the
// test closes them all whatever state http.Server left them in.
type trackingListener struct {
	*Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

// TestPreloadPythonClient: a urllib client under the preload against our
// net/http server: a GET of 3 MiB and a POST of 1 MiB that comes back.
func TestPreloadPythonClient(t *testing.T) {
	testutil.RequireRDMA(t)
	py := python3(t)
	env := preloadEnv(t)
	dir := t.TempDir()
	data := preloadContent(3<<20+4321, 3)
	post := preloadContent(1<<20+13, 4)
	postFile := filepath.Join(dir, "post.bin")
	if err := os.WriteFile(postFile, post, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "client.py")
	if err := os.WriteFile(script, []byte(preloadClientPy), 0o644); err != nil {
		t.Fatal(err)
	}
	l, addr := labListen(t, &ListenConfig{Options: Options{Logf: t.Logf}})
	tl := &trackingListener{Listener: l}

	var mu sync.Mutex
	var posted []string // SHA-256 of each POST body the server read
	mux := http.NewServeMux()
	mux.HandleFunc("GET /data", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "data.bin", time.Time{}, bytes.NewReader(data))
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("POST: reading the body: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		sum := sha256Hex(body)
		mu.Lock()
		posted = append(posted, sum)
		mu.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("X-Body-SHA256", sum)
		w.Write(body)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tl) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
		tl.mu.Lock()
		defer tl.mu.Unlock()
		for _, c := range tl.conns {
			t.Logf("served rsocket connection %v -> %v", c.LocalAddr(), c.RemoteAddr())
			c.Close()
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, py, script, "http://"+addr, postFile)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	t.Logf("python client:\n%s%s", &out, &errOut)
	if err != nil {
		t.Fatalf("python client: %v", err)
	}

	wantGet := fmt.Sprintf("GET 200 %d %s", len(data), sha256Hex(data))
	wantPost := fmt.Sprintf("POST 200 %s %d %s", sha256Hex(post), len(post), sha256Hex(post))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != wantGet || lines[1] != wantPost {
		t.Errorf("python client printed %q; want %q", lines, []string{wantGet, wantPost})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posted) != 1 || posted[0] != sha256Hex(post) {
		t.Errorf("our server read POST bodies with SHA-256 %q; python sent one of %s", posted, sha256Hex(post))
	}
}
