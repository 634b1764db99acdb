package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// workspace is the directory the file tools may use without asking: Env.Workspace, else the git
// root above the working directory, else the working directory. Symbolic links are resolved, so
// a link inside the workspace that points out of it does not widen it.
func workspace(env Env) (string, error) {
	root := env.Workspace
	if root == "" {
		dir, err := workDir(env)
		if err != nil {
			return "", err
		}
		root = dir
		for d := dir; ; {
			if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
				root = d
				break
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return realPath(abs), nil
}

// realPath resolves the symbolic links of the longest part of p that exists and keeps the rest
// as written, so a file about to be created is judged by the directory it would land in.
func realPath(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		up := filepath.Dir(cur)
		if up == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = up
	}
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// outsideWorkspace tells whether abs lies outside the workspace, and the workspace.
func outsideWorkspace(env Env, abs string) (bool, string, error) {
	root, err := workspace(env)
	if err != nil {
		return false, "", err
	}
	return !within(root, realPath(abs)), root, nil
}

// allowRead lets a read-only file tool (read_file, list_files, search_files) touch abs: inside
// the workspace freely, outside only with the approver's consent.
func allowRead(ctx context.Context, env Env, tool, abs string) error {
	out, root, err := outsideWorkspace(env, abs)
	if err != nil || !out {
		return err
	}
	return ask(ctx, env, ApprovalRequest{Tool: tool, Path: abs, Outside: true, WorkDir: root})
}

// allowWrite lets a writing tool (write_file, edit_file) change abs as diff shows: outside the
// workspace, or always when Env.ConfirmWrites, only with the approver's consent, which is shown
// the diff.
func allowWrite(ctx context.Context, env Env, tool, abs, diff string) error {
	out, root, err := outsideWorkspace(env, abs)
	if err != nil || (!out && !env.ConfirmWrites) {
		return err
	}
	return ask(ctx, env, ApprovalRequest{Tool: tool, Path: abs, Outside: out, WorkDir: root, Diff: diff})
}

// ask puts req to the approver; without one the answer is no, with a reason the model can act on.
// A refusal of something outside the workspace says so.
func ask(ctx context.Context, env Env, req ApprovalRequest) error {
	if env.Approver == nil {
		what := "reading"
		if req.Diff != "" {
			what = "writing"
		}
		return Deny(fmt.Sprintf("%s %s needs approval: it is outside the workspace %s (non-interactive runs need --yes)",
			what, req.Path, req.WorkDir))(ctx, req)
	}
	err := env.Approver(ctx, req)
	if err != nil && req.Outside && errors.Is(err, ErrDenied) {
		return fmt.Errorf("%s is outside the workspace %s: %w", req.Path, req.WorkDir, err)
	}
	return err
}
