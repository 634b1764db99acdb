package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Report labels.
const (
	Impl    = "spool (Go)"
	Harness = "spool bench store (WORKLOAD.md v1)"
)

const modulePath = "github.com/spoolhq/spool"

// peerInfo identifies this build: module version and VCS stamp when the binary carries one (go
// build in a git checkout does; go test and go run do not).
func peerInfo() PeerInfo {
	p := PeerInfo{Repo: modulePath, Version: "(devel)", Commit: "unknown", ExecutableSHA256: executableSHA256()}
	if v := schemaVersion(); v > 0 {
		p.SchemaVersion = &v
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return p
	}
	if bi.Main.Path != "" {
		p.Repo = bi.Main.Path
	}
	if bi.Main.Version != "" {
		p.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			p.Commit = s.Value
		case "vcs.time":
			p.CommitTime = s.Value
		case "vcs.modified":
			p.Modified = s.Value == "true"
		}
	}
	return p
}

func executableSHA256() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// moduleVersion is the version of a dependency linked into this binary, or "".
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// platform resembles Python's platform.platform(): OS, kernel release, architecture.
func platform() string {
	parts := []string{runtime.GOOS}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, strings.TrimSpace(string(b)))
	}
	return strings.Join(append(parts, runtime.GOARCH), "-")
}
