package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Func is one function declaration's measures.
type Func struct {
	Pos   token.Position // of the func keyword
	Name  string         // Name or (Recv).Name
	Lines int            // opening brace's line to closing brace's, inclusive
	Cyclo int
}

func main() {
	maxLines := flag.Int("max-lines", 80, "longest body allowed, in lines")
	maxCyclo := flag.Int("max-cyclo", 25, "highest cyclomatic complexity allowed")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: funclint [-max-lines N] [-max-cyclo N] dir|dir/...")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		args = []string{"./..."}
	}
	n, err := run(os.Stdout, args, *maxLines, *maxCyclo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclint:", err)
		os.Exit(2)
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "funclint: %d function(s) over %d lines or complexity %d\n", n, *maxLines, *maxCyclo)
		os.Exit(1)
	}
}

// run measures the files under the patterns and prints the offenders to w,
// sorted by position; it returns how many it printed.
func run(w io.Writer, patterns []string, maxLines, maxCyclo int) (int, error) {
	files, err := goFiles(patterns)
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	var bad []Func
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return 0, err
		}
		funcs, err := Measure(fset, name, src)
		if err != nil {
			return 0, err
		}
		for _, f := range funcs {
			if f.Lines > maxLines || f.Cyclo > maxCyclo {
				bad = append(bad, f)
			}
		}
	}
	sort.Slice(bad, func(i, j int) bool {
		if bad[i].Pos.Filename != bad[j].Pos.Filename {
			return bad[i].Pos.Filename < bad[j].Pos.Filename
		}
		return bad[i].Pos.Line < bad[j].Pos.Line
	})
	for _, f := range bad {
		fmt.Fprintf(w, "%s:%d: %s: %d lines (max %d), complexity %d (max %d)\n",
			f.Pos.Filename, f.Pos.Line, f.Name, f.Lines, maxLines, f.Cyclo, maxCyclo)
	}
	return len(bad), nil
}

// goFiles lists the non-test .go files a pattern names: a directory's own, or
// with a trailing /... its tree's, leaving out testdata, vendor and the
// directories go ignores (names starting with . or _).
func goFiles(patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		root, recursive := strings.CutSuffix(p, "/...")
		if p == "..." {
			root, recursive = ".", true
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path == root {
					return nil
				}
				base := d.Name()
				if !recursive || base == "testdata" || base == "vendor" ||
					strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// generated is the line Go's convention puts in a generated file
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// Measure parses one file's source and measures its function declarations;
// a generated file has none to measure.
func Measure(fset *token.FileSet, name string, src []byte) ([]Func, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if generated.MatchString(c.Text) {
				return nil, nil
			}
		}
	}
	var out []Func
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		out = append(out, Func{
			Pos:   fset.Position(fd.Pos()),
			Name:  funcName(fd),
			Lines: fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line + 1,
			Cyclo: Cyclo(fd),
		})
	}
	return out, nil
}

// funcName is gocyclo's spelling: Name, or (T).Name / (*T).Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return "(" + recvType(fd.Recv.List[0].Type) + ")." + fd.Name.Name
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// Cyclo is the function's cyclomatic complexity as gocyclo counts it.
func Cyclo(fd *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fd, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil { // default has no list
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil { // default has no communication
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}
