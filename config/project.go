package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/regfile"
)

// ProjectFileName is a project's own config file, relative to the project directory.
var ProjectFileName = filepath.Join(".spool", "config.yaml")

// FindProjectFile returns the project config file for workDir: .spool/config.yaml in workDir or
// a parent up to the git root, the nearest winning (outside a git repository only workDir is
// searched), as project rule files (SPOOL.md) are found; "" when there is none.
func FindProjectFile(workDir string) (string, error) {
	dir, err := filepath.Abs(workDir)
	if err != nil {
		return "", fmt.Errorf("config: find %s from %q: %w", ProjectFileName, workDir, err)
	}
	root := gitRoot(dir)
	for d := dir; ; {
		p := filepath.Join(d, ProjectFileName)
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
			return "", &Error{Source: p, Reason: err.Error()}
		}
		parent := filepath.Dir(d)
		if root == "" || d == root || parent == d {
			return "", nil
		}
		d = parent
	}
}

func gitRoot(dir string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// LoadProject merges the project config file of workDir (FindProjectFile) into cfg. A project
// file may set mcp.servers only; any other key is an error naming its line. Precedence: the
// project's servers come after the home config's, and one with the name of a home server
// replaces it (the project is the nearer scope). The servers are used only when the home config
// allows it (mcp.project_servers: true); otherwise they are left out and notice says so, in one
// line, for the caller to print. cfg.ProjectFile names the file that was merged.
func LoadProject(cfg *Config, workDir string) (notice string, err error) {
	file, err := FindProjectFile(workDir)
	if err != nil || file == "" {
		return "", err
	}
	data, err := regfile.ReadFile(file)
	if err != nil {
		return "", &Error{Source: file, Reason: err.Error()}
	}
	var proj Config
	sources := map[string]string{}
	if err := decodeFile(&proj, file, data, sources); err != nil {
		return "", err
	}
	for key, src := range sources {
		if key != "mcp" && key != "mcp.servers" && !strings.HasPrefix(key, "mcp.servers[") {
			return "", &Error{Source: src, Key: key, Reason: "a project file sets mcp.servers only (everything else lives in " + filepath.Join("$SPOOL_HOME", FileName) + ")"}
		}
	}
	if err := proj.validateMCP(sources); err != nil {
		return "", err
	}
	if len(proj.MCP.Servers) == 0 {
		return "", nil
	}
	if !cfg.MCP.ProjectServers {
		names := make([]string, len(proj.MCP.Servers))
		for i, s := range proj.MCP.Servers {
			names[i] = s.Name
		}
		return fmt.Sprintf("MCP servers %s of %s are not started: set mcp.project_servers: true in %s to allow a project's servers",
			strings.Join(names, ", "), file, cmpOr(cfg.File, filepath.Join(cfg.Home, FileName))), nil
	}
	merged := make([]MCPServer, 0, len(cfg.MCP.Servers)+len(proj.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		if !slicesContainsName(proj.MCP.Servers, s.Name) {
			merged = append(merged, s)
		}
	}
	cfg.MCP.Servers = append(merged, proj.MCP.Servers...)
	cfg.ProjectFile = file
	return "", nil
}

func slicesContainsName(ss []MCPServer, name string) bool {
	for _, s := range ss {
		if s.Name == name {
			return true
		}
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
