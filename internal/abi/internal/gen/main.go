package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/goverbs/rdma/internal/abi/internal/names"
	"github.com/goverbs/rdma/internal/abi/internal/stamp"
)

// pinnedVersion is the Debian linux-libc-dev version whose UAPI headers
// package abi is generated from (Debian 12 "bookworm" security update of
// Linux 6.1). Changing it means regenerating and reviewing the diff.
const pinnedVersion = "6.1.192-3"

const (
	debPackage = "linux-libc-dev"
	debEnv     = "GOVERBS_LINUX_LIBC_DEV_DEB"

	inputFile  = "internal/gen/godefs_input.go.in"
	outputFile = "zabi.go"
	tableFile  = "zabi_test.go"

	// buildConstraint limits the generated files to the architectures whose
	// layout was checked (both LP64; the UAPI structs use fixed-size types).
	// Go lays out fixed-size fields alike on every GOOS of one GOARCH, so the
	// files carry no GOOS: the module type-checks off Linux (doc.go).
	buildConstraint = "//go:build amd64 || arm64"

	offsetPrefix = "goverbs_off_"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	dir := flag.String("C", ".", "directory of package abi")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	checkArm64 := flag.Bool("check-arm64", false, "also generate for arm64 with aarch64-linux-gnu-gcc and fail unless the output is identical")
	flag.Parse()
	if err := run(*dir, *keep, *checkArm64); err != nil {
		log.Fatal(err)
	}
}

func run(dir string, keep, checkArm64 bool) error {
	tmp, err := os.MkdirTemp("", "goverbs-abi-gen-")
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			log.Printf("temporary files kept in %s", tmp)
		} else {
			os.RemoveAll(tmp)
		}
	}()

	incs, source, err := headers(tmp)
	if err != nil {
		return err
	}
	log.Printf("headers: %s %s (%s)", debPackage, pinnedVersion, source)
	// The input is kept as a .go.in file so that no Go file of the module
	// imports "C"; cgo reads a copy named .go in the temporary directory.
	inputSrc, err := os.ReadFile(filepath.Join(dir, inputFile))
	if err != nil {
		return err
	}
	input := filepath.Join(tmp, "godefs_input.go")
	if err := os.WriteFile(input, inputSrc, 0o644); err != nil {
		return err
	}
	srcHash, err := stamp.SourcesHash(dir)
	if err != nil {
		return err
	}
	out, table, err := generate(filepath.Join(tmp, "host"), nil, incs, input, srcHash)
	if err != nil {
		return err
	}

	if checkArm64 {
		// The generic UAPI headers of the pinned package with the cross
		// compiler's own <asm/*.h>, which only define the fixed-size types.
		if len(incs) == 0 {
			return errors.New("-check-arm64 needs the pinned .deb, not /usr/include")
		}
		env := []string{"GOARCH=arm64", "CC=aarch64-linux-gnu-gcc"}
		aout, atable, err := generate(filepath.Join(tmp, "arm64"), env, incs[:1], input, srcHash)
		if err != nil {
			return fmt.Errorf("arm64 (install gcc-aarch64-linux-gnu): %v", err)
		}
		if !bytes.Equal(out, aout) || !bytes.Equal(table, atable) {
			_ = os.WriteFile(filepath.Join(tmp, "arm64.go"), aout, 0o644)
			keep = true
			return fmt.Errorf("arm64 output differs from the host output (kept in %s): the layout is not architecture-independent", tmp)
		}
		log.Printf("arm64 output is identical")
	}

	if err := os.WriteFile(filepath.Join(dir, outputFile), out, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, tableFile), table, 0o644)
}

// generate runs both cgo passes with the extra environment env and renders
// the output files.
func generate(tmp string, env, incs []string, input, srcHash string) (out, table []byte, err error) {
	godefs, err := cgo(tmp, "godefs", env, incs, input, true)
	if err != nil {
		return nil, nil, err
	}
	if _, err := cgo(tmp, "plain", env, incs, input, false); err != nil {
		return nil, nil, err
	}
	plain, err := os.ReadFile(filepath.Join(tmp, "plain", "_cgo_gotypes.go"))
	if err != nil {
		return nil, nil, err
	}
	inputSrc, err := os.ReadFile(input)
	if err != nil {
		return nil, nil, err
	}
	g := &generator{fset: token.NewFileSet()}
	if err := g.load(inputSrc, godefs, plain); err != nil {
		return nil, nil, err
	}
	return g.render(srcHash)
}

// headers returns the -I flags for the pinned headers and a description of
// where they came from.
func headers(tmp string) (incs []string, source string, err error) {
	deb := os.Getenv(debEnv)
	var downloadErr error
	if deb == "" {
		deb, downloadErr = download(tmp)
	}
	if deb != "" {
		root := filepath.Join(tmp, "root")
		if err := checkDeb(deb); err != nil {
			return nil, "", err
		}
		if out, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("dpkg-deb -x %s: %v: %s", deb, err, out)
		}
		arch, err := debField(deb, "Architecture")
		if err != nil {
			return nil, "", err
		}
		triplet, ok := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[arch]
		if !ok {
			return nil, "", fmt.Errorf("%s is for architecture %q; generate on amd64 or arm64", deb, arch)
		}
		inc := filepath.Join(root, "usr", "include")
		return []string{"-I" + inc, "-I" + filepath.Join(inc, triplet)}, "downloaded .deb", nil
	}

	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", debPackage).Output()
	installed := strings.TrimSpace(string(out))
	if err == nil && installed == pinnedVersion {
		log.Printf("apt-get download failed (%v); using /usr/include from the installed %s %s", downloadErr, debPackage, installed)
		return nil, "installed package", nil
	}
	if installed == "" {
		installed = "none"
	}
	return nil, "", fmt.Errorf("cannot get the headers of %s %s: apt-get download failed (%v) and the installed version is %s.\n"+
		"Fetch %s_%s_<arch>.deb (for example from snapshot.debian.org) and run again with %s=/path/to/it.deb,\n"+
		"or install that exact version (apt-get install %s=%s).",
		debPackage, pinnedVersion, downloadErr, installed,
		debPackage, pinnedVersion, debEnv, debPackage, pinnedVersion)
}

// download fetches the pinned .deb into tmp with apt-get.
func download(tmp string) (string, error) {
	cmd := exec.Command("apt-get", "download", debPackage+"="+pinnedVersion)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, debPackage+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %d .deb files in %s", len(debs), tmp)
	}
	return debs[0], nil
}

func checkDeb(deb string) error {
	pkg, err := debField(deb, "Package")
	if err != nil {
		return err
	}
	ver, err := debField(deb, "Version")
	if err != nil {
		return err
	}
	if pkg != debPackage || ver != pinnedVersion {
		return fmt.Errorf("%s is %s %s, want %s %s", deb, pkg, ver, debPackage, pinnedVersion)
	}
	return nil
}

func debField(deb, field string) (string, error) {
	out, err := exec.Command("dpkg-deb", "-f", deb, field).Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-deb -f %s %s: %v", deb, field, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// cgo runs go tool cgo (with -godefs if godefs) on input and returns stdout.
func cgo(tmp, objdir string, env, incs []string, input string, godefs bool) ([]byte, error) {
	args := []string{"tool", "cgo"}
	if godefs {
		args = append(args, "-godefs")
	}
	if err := os.MkdirAll(filepath.Join(tmp, objdir), 0o755); err != nil {
		return nil, err
	}
	args = append(args, "-objdir", filepath.Join(tmp, objdir), "--")
	args = append(args, incs...)
	args = append(args, filepath.Base(input))
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Dir(input)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

type inputType struct {
	goName string
	cType  string // as written after "C.": struct_x or a typedef name
	doc    string
}

type inputDecl struct {
	doc   string
	tok   token.Token
	types []inputType
	// consts maps Go constant name to C name.
	consts map[string]string
	order  []string
}

type generator struct {
	fset *token.FileSet

	decls []inputDecl
	// godefs declarations, in input order (import "C" removed).
	out []*ast.GenDecl
	// type expressions of the plain cgo output by _Ctype_ name.
	plainTypes map[string]ast.Expr
}

func (g *generator) load(input, godefs, plain []byte) error {
	in, err := parser.ParseFile(g.fset, inputFile, input, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, d := range in.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok == token.IMPORT {
			continue
		}
		decl := inputDecl{doc: gd.Doc.Text(), tok: gd.Tok, consts: map[string]string{}}
		for _, s := range gd.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				c, err := cName(s.Type)
				if err != nil {
					return fmt.Errorf("type %s: %v", s.Name.Name, err)
				}
				doc := s.Doc.Text() + s.Comment.Text()
				decl.types = append(decl.types, inputType{goName: s.Name.Name, cType: c, doc: strings.TrimSpace(doc)})
			case *ast.ValueSpec:
				if len(s.Names) != 1 || len(s.Values) != 1 {
					return fmt.Errorf("const %s: want one name = C.NAME per line", s.Names[0].Name)
				}
				c, err := cName(s.Values[0])
				if err != nil {
					return fmt.Errorf("const %s: %v", s.Names[0].Name, err)
				}
				decl.consts[s.Names[0].Name] = c
				decl.order = append(decl.order, s.Names[0].Name)
			}
		}
		g.decls = append(g.decls, decl)
	}

	out, err := parser.ParseFile(g.fset, "godefs", godefs, 0)
	if err != nil {
		return fmt.Errorf("parsing cgo -godefs output: %v", err)
	}
	for _, d := range out.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok != token.IMPORT {
			g.out = append(g.out, gd)
		}
	}
	if len(g.out) != len(g.decls) {
		return fmt.Errorf("cgo -godefs produced %d declarations for %d in %s", len(g.out), len(g.decls), inputFile)
	}

	pf, err := parser.ParseFile(g.fset, "_cgo_gotypes.go", plain, 0)
	if err != nil {
		return fmt.Errorf("parsing cgo output: %v", err)
	}
	g.plainTypes = map[string]ast.Expr{}
	for _, d := range pf.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			g.plainTypes[ts.Name.Name] = ts.Type
		}
	}
	return nil
}

// cName returns NAME for the expression C.NAME.
func cName(e ast.Expr) (string, error) {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "C" {
			return sel.Sel.Name, nil
		}
	}
	return "", errors.New("want C.NAME")
}

// plainStruct follows typedefs in the plain cgo output from _Ctype_<c> to a
// struct type and returns it and the name of the struct type.
func (g *generator) plainStruct(c string) (*ast.StructType, string, error) {
	name := "_Ctype_" + c
	for i := 0; i < 10; i++ {
		t, ok := g.plainTypes[name]
		if !ok {
			return nil, "", fmt.Errorf("cgo output has no type %s", name)
		}
		switch t := t.(type) {
		case *ast.StructType:
			return t, name, nil
		case *ast.Ident:
			name = t.Name
		default:
			return nil, "", fmt.Errorf("C type %s is not a struct", c)
		}
	}
	return nil, "", fmt.Errorf("C type %s: typedef chain too long", c)
}

// isAnon reports whether cgo named a member anonN because it has no C name.
func isAnon(c string) bool {
	n, ok := strings.CutPrefix(c, "anon")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// member is one named struct member.
type member struct {
	id  *ast.Ident
	typ ast.Expr
	f   *ast.Field
}

// members flattens the members of a struct.
func members(st *ast.StructType) []member {
	var ms []member
	for _, f := range st.Fields.List {
		for _, id := range f.Names {
			ms = append(ms, member{id, f.Type, f})
		}
	}
	return ms
}

// kernelPointer reports whether e is a pointer to a C struct that user space
// never sees (struct ib_qp * in the union of struct siw_cqe): its value is a
// kernel address, which Go holds as a uint64 so that no Go pointer type lies
// over memory the kernel writes.
func kernelPointer(e ast.Expr, anon map[string]string) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	if !ok || !strings.HasPrefix(id.Name, "_Ctype_struct_") {
		return false
	}
	_, known := anon[id.Name]
	return !known
}

// ctypeIdent returns the first identifier naming a cgo C type in e.
func ctypeIdent(e ast.Expr) *ast.Ident {
	var found *ast.Ident
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && found == nil && strings.HasPrefix(id.Name, "_Ctype_") {
			found = id
		}
		return found == nil
	})
	return found
}

func (g *generator) render(srcHash string) (file, table []byte, err error) {
	// Anonymous C structs referenced from members (_Ctype_struct___N) get
	// the Go name of the input typedef that resolves to them.
	anon := map[string]string{}
	for _, d := range g.decls {
		for _, t := range d.types {
			if strings.HasPrefix(t.cType, "struct_") {
				continue
			}
			if _, name, err := g.plainStruct(t.cType); err == nil {
				anon[name] = t.goName
			}
		}
	}

	var body bytes.Buffer
	body.WriteString("package abi\n\nimport \"structs\"\n\n")
	var typeRows, offsetRows, constRows []string
	for i, d := range g.decls {
		gd := g.out[i]
		if gd.Tok != d.tok {
			return nil, nil, fmt.Errorf("declaration %d: cgo -godefs output does not match the input", i)
		}
		switch d.tok {
		case token.TYPE:
			if len(gd.Specs) != len(d.types) {
				return nil, nil, fmt.Errorf("type group %d: %d types out, %d in", i, len(gd.Specs), len(d.types))
			}
			writeComment(&body, d.doc)
			body.WriteString("\n")
			for j, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				in := d.types[j]
				if ts.Name.Name != in.goName {
					return nil, nil, fmt.Errorf("type %s: cgo -godefs output has %s in its place", in.goName, ts.Name.Name)
				}
				if err := g.fixType(ts, in, anon); err != nil {
					return nil, nil, err
				}
				doc := in.doc
				if doc == "" {
					doc = fmt.Sprintf("%s is struct %s.", in.goName, strings.TrimPrefix(in.cType, "struct_"))
				} else {
					doc = in.goName + " is the " + doc + "."
				}
				writeComment(&body, doc)
				if err := g.print(&body, &ast.GenDecl{Tok: token.TYPE, Specs: []ast.Spec{ts}}); err != nil {
					return nil, nil, err
				}
				body.WriteString("\n")
				if c, ok := strings.CutPrefix(in.cType, "struct_"); ok {
					typeRows = append(typeRows, fmt.Sprintf("%q: reflect.TypeFor[%s](),", c, in.goName))
				}
			}
		case token.CONST:
			if len(gd.Specs) != len(d.order) {
				return nil, nil, fmt.Errorf("const group %d: %d constants out, %d in", i, len(gd.Specs), len(d.order))
			}
			for j, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				name := vs.Names[0].Name
				if name != d.order[j] {
					return nil, nil, fmt.Errorf("const %s: cgo -godefs output has %s in its place", d.order[j], name)
				}
				if !ast.IsExported(name) {
					continue
				}
				if strings.HasPrefix(d.consts[name], offsetPrefix) {
					offsetRows = append(offsetRows, fmt.Sprintf("%q: %s,", name, name))
				} else {
					constRows = append(constRows, fmt.Sprintf("%q: %s,", name, name))
				}
			}
			writeComment(&body, d.doc)
			if err := g.print(&body, gd); err != nil {
				return nil, nil, err
			}
			body.WriteString("\n")
		default:
			return nil, nil, fmt.Errorf("unexpected %s declaration in %s", d.tok, inputFile)
		}
	}

	formatted, err := format.Source(body.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("formatting output: %v\n%s", err, body.Bytes())
	}
	file = withHeader(formatted, srcHash)

	var tb bytes.Buffer
	tb.WriteString("package abi\n\nimport \"reflect\"\n\n")
	tb.WriteString("// generatedTypes maps C struct names to the Go types generated for them.\n")
	writeMap(&tb, "generatedTypes", "map[string]reflect.Type", typeRows)
	tb.WriteString("// generatedOffsets holds the generated offset constants by name.\n")
	writeMap(&tb, "generatedOffsets", "map[string]uintptr", offsetRows)
	tb.WriteString("// generatedConsts holds the generated constants by name.\n")
	writeMap(&tb, "generatedConsts", "map[string]int64", constRows)
	tf, err := format.Source(tb.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("formatting tables: %v", err)
	}
	return file, withHeader(tf, srcHash), nil
}

func writeMap(b *bytes.Buffer, name, typ string, rows []string) {
	fmt.Fprintf(b, "var %s = %s{\n", name, typ)
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("}\n\n")
}

// withHeader prepends the generated-code header, whose Body-SHA256 line
// covers everything after it.
func withHeader(body []byte, srcHash string) []byte {
	rest := []byte("\n" + buildConstraint + "\n\n")
	rest = append(rest, body...)
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate ./internal/abi (internal/gen); DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// Source: UAPI headers of Debian %s %s, read with go tool cgo -godefs %s.\n", debPackage, pinnedVersion, inputFile)
	b.WriteString(stamp.SourcesPrefix + srcHash + "\n")
	b.WriteString(stamp.BodyPrefix + stamp.Hash(rest) + "\n")
	b.Write(rest)
	return b.Bytes()
}

func writeComment(b *bytes.Buffer, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			b.WriteString("//\n")
		} else {
			b.WriteString("// " + l + "\n")
		}
	}
}

func (g *generator) print(b *bytes.Buffer, n ast.Node) error {
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(b, g.fset, n); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

// fixType renames the members of a godefs struct to the names package's
// spelling of the C member names, and replaces references to anonymous C
// structs with their Go names.
func (g *generator) fixType(ts *ast.TypeSpec, in inputType, anon map[string]string) error {
	if strings.HasPrefix(in.cType, "struct_") {
		if want := names.Type(strings.TrimPrefix(in.cType, "struct_")); want != in.goName {
			return fmt.Errorf("type %s: struct %s must be named %s (see internal/names)", in.goName, strings.TrimPrefix(in.cType, "struct_"), want)
		}
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return nil
	}
	pst, _, err := g.plainStruct(in.cType)
	if err != nil {
		return fmt.Errorf("type %s: %v", in.goName, err)
	}
	defer func() {
		// Every struct keeps the C layout: say so to the compiler.
		hl := &ast.Field{
			Names: []*ast.Ident{ast.NewIdent("_")},
			Type:  &ast.SelectorExpr{X: ast.NewIdent("structs"), Sel: ast.NewIdent("HostLayout")},
		}
		st.Fields.List = append([]*ast.Field{hl}, st.Fields.List...)
	}()
	gms, cms := members(st), members(pst)
	if len(gms) != len(cms) {
		return fmt.Errorf("type %s: cgo -godefs gave %d members, cgo gave %d", in.goName, len(gms), len(cms))
	}
	seen := map[string]bool{}
	for k, m := range gms {
		id := m.id
		c := cms[k].id.Name
		if strings.HasPrefix(c, "_") && token.IsKeyword(c[1:]) {
			c = c[1:] // cgo prefixes members named like Go keywords with _
		}
		gname := strings.TrimPrefix(id.Name, "X") // godefs exports _x as X_x
		if isAnon(c) && !isAnon(strings.ToLower(gname)) {
			// An anonymous union: godefs gives it the name and type of
			// its first member.
			c = strings.ToLower(gname)
		}
		switch {
		case c == "_":
			if !strings.HasPrefix(id.Name, "Pad_cgo_") {
				return fmt.Errorf("type %s member %d: padding in cgo output, %s in cgo -godefs output", in.goName, k, id.Name)
			}
		case !strings.HasSuffix(strings.ToLower(c), strings.ToLower(gname)):
			return fmt.Errorf("type %s member %d: C name %s does not match cgo -godefs name %s", in.goName, k, c, id.Name)
		}
		id.Name = names.Field(c)
		if id.Name != "_" {
			if seen[id.Name] {
				return fmt.Errorf("type %s: two members named %s", in.goName, id.Name)
			}
			seen[id.Name] = true
		}

		// A member whose type is an anonymous C struct: the two cgo runs
		// number anonymous structs differently, so take the type from the
		// plain run's member at the same position.
		if kernelPointer(m.typ, anon) {
			if len(m.f.Names) != 1 {
				return fmt.Errorf("type %s member %s: a kernel pointer declared with other members", in.goName, id.Name)
			}
			m.f.Type = ast.NewIdent("uint64")
			continue
		}
		gt := ctypeIdent(m.typ)
		if gt == nil {
			continue
		}
		ct := ctypeIdent(cms[k].typ)
		if ct == nil {
			return fmt.Errorf("type %s member %s: cgo -godefs type %s, cgo type has no C type", in.goName, id.Name, gt.Name)
		}
		goName, ok := anon[ct.Name]
		if !ok {
			return fmt.Errorf("type %s member %s has C type %s, which has no Go type: add it to %s", in.goName, id.Name, strings.TrimPrefix(ct.Name, "_Ctype_"), inputFile)
		}
		gt.Name = goName
	}
	return nil
}
