package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/stackbone/box/config"
)

// outPath is the document, relative to the repository's root.
const outPath = "docs/configuration.md"

//go:embed configuration.md.tmpl
var tmplText string

// A structType is one struct of package config as its source declares it.
type structType struct {
	doc    string
	fields []field
}

// A field is one YAML key of a struct.
type field struct {
	goName string
	key    string
	typ    ast.Expr
	doc    string
}

// source is what the config package declares: its structs, and its
// constants whose value is a plain string or number.
type source struct {
	types  map[string]*structType
	consts map[string]string
}

// parseConfig reads the struct types and constants of package config from
// its source.
func parseConfig(dir string) (*source, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	types := map[string]*structType{}
	consts := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if ok && gd.Tok == token.CONST {
				addConsts(consts, gd)
			}
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				t := &structType{doc: doc.Text()}
				for _, fl := range st.Fields.List {
					if len(fl.Names) == 0 {
						return nil, fmt.Errorf("%s: embedded field in %s", fset.Position(fl.Pos()), ts.Name.Name)
					}
					key := ""
					if fl.Tag != nil {
						tag, _ := strconv.Unquote(fl.Tag.Value)
						key, _, _ = strings.Cut(reflect.StructTag(tag).Get("yaml"), ",")
					}
					for _, n := range fl.Names {
						if !n.IsExported() || key == "-" {
							continue
						}
						if key == "" {
							return nil, fmt.Errorf("%s: %s.%s has no yaml tag", fset.Position(n.Pos()), ts.Name.Name, n.Name)
						}
						t.fields = append(t.fields, field{goName: n.Name, key: key, typ: fl.Type, doc: fl.Doc.Text()})
					}
				}
				types[ts.Name.Name] = t
			}
		}
	}
	return &source{types: types, consts: consts}, nil
}

// addConsts records, as Markdown, the constants of a declaration whose
// value is a string (a word in code font, a sentence quoted), a number, or
// a product of numbers and time units (a duration such as 30 * time.Second,
// written 30s).
func addConsts(consts map[string]string, gd *ast.GenDecl) {
	for _, s := range gd.Specs {
		vs := s.(*ast.ValueSpec)
		if len(vs.Names) != 1 || len(vs.Values) != 1 {
			continue
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				consts[vs.Names[0].Name] = "`" + v + "`"
				if strings.Contains(v, " ") {
					consts[vs.Names[0].Name] = strconv.Quote(v) // a sentence
				}
			}
			continue
		}
		if v, dur, ok := evalConst(vs.Values[0]); ok {
			consts[vs.Names[0].Name] = "`" + strconv.FormatInt(v, 10) + "`"
			if dur {
				consts[vs.Names[0].Name] = "`" + formatDuration(time.Duration(v)) + "`"
			}
		}
	}
}

// evalConst computes an integer constant expression of literals, time
// units, products and shifts; dur says a time unit is in it.
func evalConst(e ast.Expr) (v int64, dur, ok bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.INT {
			return 0, false, false
		}
		n, err := strconv.ParseInt(x.Value, 0, 64)
		return n, false, err == nil
	case *ast.ParenExpr:
		return evalConst(x.X)
	case *ast.SelectorExpr:
		units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
		if pkg, isIdent := x.X.(*ast.Ident); isIdent && pkg.Name == "time" {
			u, ok := units[x.Sel.Name]
			return int64(u), true, ok
		}
	case *ast.BinaryExpr:
		a, da, oka := evalConst(x.X)
		b, db, okb := evalConst(x.Y)
		if !oka || !okb {
			return 0, false, false
		}
		switch x.Op {
		case token.MUL:
			return a * b, da || db, true
		case token.SHL:
			return a << b, da, true
		}
	}
	return 0, false, false
}

// formatDuration writes a duration as the file would: 1h, 30m, 1m30s,
// 700ms.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// emptyConfig is what the box makes of an empty file in an empty
// environment: the defaults package config fills in itself.
func emptyConfig() (reflect.Value, error) {
	c, err := config.Parse(nil)
	if err != nil {
		return reflect.Value{}, err
	}
	if err := c.ApplyEnv(func(string) string { return "" }); err != nil {
		return reflect.Value{}, err
	}
	return reflect.ValueOf(*c), nil
}

// renderer writes the settings' sections; problems collects the fields
// without a doc comment.
type renderer struct {
	root   string
	types  map[string]*structType
	consts map[string]string
	// pkgConsts are the constants of the other packages a comment names
	// (voice.DefaultMinEndpointDelay), by package.
	pkgConsts map[string]map[string]string
	defaults  reflect.Value
	problems  []string
	done      map[string]bool
}

// generate builds the document from the config package under root.
func generate(root string) ([]byte, error) {
	src, err := parseConfig(filepath.Join(root, "config"))
	if err != nil {
		return nil, err
	}
	types := src.types
	defaults, err := emptyConfig()
	if err != nil {
		return nil, err
	}
	r := &renderer{root: root, types: types, consts: src.consts, pkgConsts: map[string]map[string]string{},
		defaults: defaults, done: map[string]bool{}}
	tmpl, err := template.New("configuration.md").Funcs(template.FuncMap{"settings": r.section}).Parse(tmplText)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, nil); err != nil {
		return nil, err
	}
	for _, f := range types["Config"].fields {
		if !r.done[f.key] {
			r.problems = append(r.problems, fmt.Sprintf("the template has no {{settings %q}}", f.key))
		}
	}
	if len(r.problems) > 0 {
		sort.Strings(r.problems)
		return nil, fmt.Errorf("%s", strings.Join(r.problems, "\n"))
	}
	return out.Bytes(), nil
}

// section renders the top-level key's settings: the template calls it.
func (r *renderer) section(key string) (string, error) {
	for _, f := range r.types["Config"].fields {
		if f.key == key {
			r.done[key] = true
			var b strings.Builder
			r.block(&b, 3, key+r.elemSuffix(f), "Config", f, r.defaults.FieldByName(f.goName))
			return strings.TrimRight(b.String(), "\n"), nil
		}
	}
	return "", fmt.Errorf("config has no key %q", key)
}

// block writes one struct's heading, its doc, a table of its plain keys and
// then, in their order, the blocks of the structs it holds.
func (r *renderer) block(b *strings.Builder, level int, path, owner string, f field, v reflect.Value) {
	typeName, _ := r.structOf(f.typ)
	t := r.types[typeName]
	fmt.Fprintf(b, "%s `%s`\n\n", strings.Repeat("#", min(level, 6)), path)
	if f.doc == "" {
		r.problems = append(r.problems, fmt.Sprintf("config.%s.%s (%s) has no doc comment", owner, f.goName, path))
	}
	docs := []string{r.markdown(f.doc, r.types[owner])}
	if !sameStart(f.doc, t.doc) {
		docs = append(docs, r.markdown(t.doc, t))
	}
	for _, d := range docs {
		if d != "" {
			b.WriteString(d + "\n")
		}
	}
	var nested []field
	rows := 0
	for _, c := range t.fields {
		if _, ok := r.structOf(c.typ); ok {
			nested = append(nested, c)
			continue
		}
		if rows == 0 {
			b.WriteString("| key | type | |\n|---|---|---|\n")
		}
		rows++
		if c.doc == "" {
			r.problems = append(r.problems, fmt.Sprintf("config.%s.%s (%s.%s) has no doc comment", typeName, c.goName, path, c.key))
		}
		desc := cell(r.markdown(c.doc, t))
		if d := fieldValue(v, c.goName); d.IsValid() && !d.IsZero() {
			if val := fmt.Sprintf("`%v`", d.Interface()); !strings.Contains(desc, val) {
				desc += " Default: " + val + "."
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", c.key, typeWords(c.typ), desc)
	}
	if rows > 0 {
		b.WriteString("\n")
	}
	for _, c := range nested {
		r.block(b, level+1, path+"."+c.key+r.elemSuffix(c), typeName, c, fieldValue(v, c.goName))
	}
}

// sameStart reports whether a field's doc and its type's doc say the same
// thing, after their first words (the field's and the type's names).
func sameStart(fieldDoc, typeDoc string) bool {
	rest := func(s string) string {
		_, r, _ := strings.Cut(strings.Join(strings.Fields(s), " "), " ")
		return r
	}
	f, t := rest(fieldDoc), rest(typeDoc)
	return strings.HasPrefix(f, t) || strings.HasPrefix(t, f)
}

// fieldValue is the named field of a struct value, or the invalid Value
// when v holds no struct (an element of a map or a list has no default).
func fieldValue(v reflect.Value, name string) reflect.Value {
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}

// structOf names the config struct a field holds (itself, through a
// pointer, as the elements of a list or the values of a map).
func (r *renderer) structOf(e ast.Expr) (string, bool) {
	switch t := e.(type) {
	case *ast.Ident:
		_, ok := r.types[t.Name]
		return t.Name, ok
	case *ast.StarExpr:
		return r.structOf(t.X)
	case *ast.ArrayType:
		return r.structOf(t.Elt)
	case *ast.MapType:
		return r.structOf(t.Value)
	}
	return "", false
}

// elemSuffix is what a path adds for a list's element or a map's key.
func (r *renderer) elemSuffix(f field) string {
	t := f.typ
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch t.(type) {
	case *ast.ArrayType:
		return "[]"
	case *ast.MapType:
		if f.goName == "Prices" {
			return ".MODEL"
		}
		return ".NAME"
	}
	return ""
}

// typeWords says a field's type in YAML's words.
func typeWords(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		switch t.Name {
		case "string":
			return "string"
		case "bool":
			return "bool"
		case "int", "int64":
			return "integer"
		case "float64":
			return "number"
		case "any":
			return "any"
		case "ModelChain":
			return "model id or list of ids"
		}
		return t.Name
	case *ast.StarExpr:
		return typeWords(t.X)
	case *ast.SelectorExpr:
		if t.Sel.Name == "Duration" {
			return "duration"
		}
		return t.Sel.Name
	case *ast.ArrayType:
		return "list of " + plural(typeWords(t.Elt))
	case *ast.MapType:
		if w := typeWords(t.Value); w == "any" {
			return "mapping"
		}
		return "mapping of " + plural(typeWords(t.Value))
	case *ast.InterfaceType:
		return "any"
	}
	return fmt.Sprintf("%T", e)
}

func plural(s string) string {
	if strings.HasPrefix(s, "list") || strings.HasPrefix(s, "mapping") {
		return s
	}
	return s + "s"
}

var (
	// qualifiedRe finds a constant of another package: voice.DefaultMinEndpointDelay.
	qualifiedRe = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b`)
	goNameRe    = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	// camelRe matches a name of several words (FillerAfter, RTPPortMin),
	// which prose never uses as a word of its own.
	camelRe = regexp.MustCompile(`[a-z0-9][A-Z]|[A-Z][A-Z][a-z]`)
	// properNames are field names that are also names of products.
	properNames = map[string]bool{"LiveKit": true}
)

// markdown turns a doc comment into Markdown, the struct's Go field names
// into their YAML keys (a name of several words anywhere, a one-word name
// such as URL or Model only as the comment's first word) and the names of
// constants into their values.
func (r *renderer) markdown(text string, t *structType) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	keys := map[string]string{}
	if t != nil {
		for _, f := range t.fields {
			keys[f.goName] = f.key
		}
	}
	var p comment.Parser
	var pr comment.Printer
	// Comments write code in backquotes, which Markdown keeps as code.
	md := strings.ReplaceAll(string(pr.Markdown(p.Parse(text))), "\\`", "`")
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
			continue // a code block
		}
		lines[i] = goNameRe.ReplaceAllStringFunc(l, func(w string) string {
			if k, ok := keys[w]; ok && camelRe.MatchString(w) && !properNames[w] {
				return "`" + k + "`"
			}
			if v, ok := r.consts[w]; ok {
				return v
			}
			return w
		})
		lines[i] = qualifiedRe.ReplaceAllStringFunc(lines[i], r.qualified)
		if i == 0 {
			if first, rest, ok := strings.Cut(lines[0], " "); ok && keys[first] != "" {
				lines[0] = "`" + keys[first] + "` " + rest
			}
		}
	}
	return strings.Join(lines, "\n")
}

// qualified is the value of a constant of another package of the box, the
// package's folder named as the package; a name that folder does not
// declare is a problem (the comment went stale).
func (r *renderer) qualified(ref string) string {
	pkg, name, _ := strings.Cut(ref, ".")
	consts, ok := r.pkgConsts[pkg]
	if !ok {
		consts = map[string]string{}
		files, _ := filepath.Glob(filepath.Join(r.root, pkg, "*.go"))
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil || f.Name.Name != pkg {
				continue
			}
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
					addConsts(consts, gd)
				}
			}
		}
		r.pkgConsts[pkg] = consts
	}
	if len(consts) == 0 {
		return ref // not a package of the box
	}
	v, ok := consts[name]
	if !ok {
		r.problems = append(r.problems, fmt.Sprintf("a comment names %s, which package %s does not declare as a constant", ref, pkg))
		return ref
	}
	return v
}

// cell makes Markdown fit one table cell.
func cell(md string) string {
	md = strings.TrimSpace(md)
	md = strings.ReplaceAll(md, "|", `\|`)
	md = strings.ReplaceAll(md, "\n\n", "<br><br>")
	return strings.ReplaceAll(md, "\n", " ")
}
