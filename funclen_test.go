package spool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a production function's length (its declaration to its closing brace).
const maxFuncLines = 150

// longFuncs are the functions still over maxFuncLines, with their length today: they may
// shrink, not grow, and no other function may join them.
var longFuncs = map[string]int{}

// No function of the module's non-test Go files is longer than maxFuncLines, but for the
// listed ones, which do not grow.
func TestNoLongFunctions(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := filepath.ToSlash(path) + " " + fd.Name.Name
			if limit, listed := longFuncs[key]; (listed && n > limit) || (!listed && n > maxFuncLines) {
				t.Errorf("%s is %d lines (at most %d): split it into named steps", key, n, max(limit, maxFuncLines))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
