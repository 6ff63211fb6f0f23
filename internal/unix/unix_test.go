package unix

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

func TestErrNotLinux(t *testing.T) {
	if !errors.Is(ErrNotLinux, ErrNotSupported) || !errors.Is(ErrNotLinux, errors.ErrUnsupported) {
		t.Errorf("ErrNotLinux does not match ErrNotSupported and errors.ErrUnsupported")
	}
	if errors.Is(ErrNotSupported, ErrNotLinux) {
		t.Errorf("ErrNotSupported matches ErrNotLinux")
	}
}

// TestSameNames checks that the Linux and the non-Linux file declare the same
// exported names, so that a name added to one alone fails here before it
// fails make goos.
func TestSameNames(t *testing.T) {
	linux, other := exported(t, "unix_linux.go"), exported(t, "unix_other.go")
	if !slices.Equal(linux, other) {
		t.Errorf("unix_linux.go declares %v\nunix_other.go declares %v", linux, other)
	}
}

func exported(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names = append(names, d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !ast.IsExported(n) })
	slices.Sort(names)
	return names
}
