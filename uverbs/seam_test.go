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
			var operands []ast.Expr
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					operands = []ast.Expr{n.X, n.Y}
				}
			case *ast.CaseClause: // switch id { case DriverSIW: }
				operands = n.List
			}
			for _, e := range operands {
				if name := driverConst(e); name != "" {
					t.Errorf("%s: a branch on %s; declare what differs in the driver's provider.Driver or an optional interface", fset.Position(e.Pos()), name)
				}
			}
			return true
		})
	}
}

// driverConst returns the name of a driver id constant e names (DriverSIW,
// rdma.DriverSIW), DriverUnknown aside, or "".
func driverConst(e ast.Expr) string {
	var name string
	switch e := e.(type) {
	case *ast.Ident:
		name = e.Name
	case *ast.SelectorExpr:
		name = e.Sel.Name
	}
	if strings.HasPrefix(name, "Driver") && name != "DriverUnknown" && name != "DriverID" {
		return name
	}
	return ""
}
