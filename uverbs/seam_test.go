package uverbs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The provider seam as CONTRIBUTING.md draws it: provider.go is the one
// file of the package that imports a driver's package, and no file
// compares a driver id with one of the Driver constants (what differs by
// driver is declared in its provider.Driver or an optional interface).
func TestSeam(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, drv := range []string{"/rxe", "/mlx5", "/siw"} {
				if strings.HasSuffix(path, "uverbs/internal"+drv) && name != "provider.go" {
					t.Errorf("%s imports %s: only provider.go speaks to a driver's package", name, path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			b, ok := n.(*ast.BinaryExpr)
			if !ok || (b.Op != token.EQL && b.Op != token.NEQ) {
				return true
			}
			for _, side := range []ast.Expr{b.X, b.Y} {
				if id, ok := side.(*ast.Ident); ok && strings.HasPrefix(id.Name, "Driver") && id.Name != "DriverUnknown" {
					t.Errorf("%s: a branch on %s; declare what differs in the driver's provider.Driver or an optional interface", fset.Position(b.Pos()), id.Name)
				}
			}
			return true
		})
	}
}
