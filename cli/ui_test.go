package cli_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestUI runs the real `spool ui`, signs in with the printed one-time URL and reads a page.
func TestUI(t *testing.T) {
	t.Parallel()
	home := seededHome(t)
	if r := spool(t, home, "ui", "--addr", "0.0.0.0:0"); r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") {
		t.Fatalf("non-loopback --addr: code %d, stderr %q", r.code, r.stderr)
	}
	cmd := exec.Command(spoolBin, "--home", home, "ui", "--addr", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the printed URL: %v", err)
	}
	i := strings.Index(line, "http://127.0.0.1:")
	if i < 0 || !strings.Contains(line, "/ui/?token=") {
		t.Fatalf("printed %q", line)
	}
	signIn := strings.TrimSpace(line[i:])
	base := signIn[:strings.Index(signIn, "/ui/")]

	anon := &http.Client{}
	if resp, err := anon.Get(base + "/ui/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without signing in: %v %v", resp, err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(signIn)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), idRoot) {
		t.Fatalf("signed in: %d, page lacks session %s", resp.StatusCode, idRoot)
	}
	if resp, err := anon.Get(signIn); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the one-time URL worked twice: %v %v", resp, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("spool ui did not stop cleanly on SIGTERM: %v", err)
	}
}
