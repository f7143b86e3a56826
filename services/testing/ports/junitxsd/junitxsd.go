// Package junitxsd checks JUnit XML documents, for tests: Schema validates
// a document against an XML Schema (the vendored Jenkins xUnit
// junit-10.xsd), and Parse decodes one into strict structs and checks what
// the schema leaves as plain strings (counts are integers that match the
// cases, times decimal seconds, timestamps ISO 8601).
//
// No maintained pure-Go XSD validator was found (those on the module proxy
// wrap the C libxml2), so Schema implements the part of XML Schema 1.0
// that junit-10.xsd uses: global and local element declarations, element
// references, named and anonymous complex types (mixed or not), sequence
// and choice with minOccurs and maxOccurs, attributes with use="required",
// xs:string, and simple types restricting xs:string by a pattern. A schema
// using anything else is refused when loaded, so a newer schema cannot be
// checked only in part without notice.
package junitxsd

import (
	"bytes"
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

const xsNS = "http://www.w3.org/2001/XMLSchema"

//go:embed junit-10.xsd
var junit10 []byte

// JUnit10 is the vendored junit-10.xsd, loaded: the schema the testing
// service's JUnit documents must satisfy.
func JUnit10() (*Schema, error) { return Load(junit10) }

// node is any XML element, as decoded.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
}

func (n node) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// elemDecl is a declared element.
type elemDecl struct {
	name     string
	text     bool // a simple type: text only, no child element, no attribute
	mixed    bool // text may appear between child elements
	attrs    map[string]attrDecl
	children map[string]*elemDecl // child elements the content model names
	content  *regexp.Regexp       // over the child names, each followed by ';'
}

type attrDecl struct {
	required bool
	pattern  *regexp.Regexp // nil: any string
}

// Schema is a loaded XML Schema.
type Schema struct {
	global map[string]*elemDecl
	types  map[string]node           // named complex types
	simple map[string]*regexp.Regexp // named simple types: their pattern
}

// Load reads a schema.
func Load(xsd []byte) (*Schema, error) {
	var root node
	if err := xml.Unmarshal(xsd, &root); err != nil {
		return nil, err
	}
	if root.XMLName != (xml.Name{Space: xsNS, Local: "schema"}) {
		return nil, fmt.Errorf("root is %v, not xs:schema", root.XMLName)
	}
	s := &Schema{global: map[string]*elemDecl{}, types: map[string]node{}, simple: map[string]*regexp.Regexp{}}
	var elems []node
	for _, c := range root.Children {
		if err := xsOnly(c); err != nil {
			return nil, err
		}
		name, _ := c.attr("name")
		switch c.XMLName.Local {
		case "element":
			elems = append(elems, c)
			s.global[name] = &elemDecl{name: name}
		case "complexType":
			s.types[name] = c
		case "simpleType":
			re, err := simplePattern(c)
			if err != nil {
				return nil, err
			}
			s.simple[name] = re
		default:
			return nil, fmt.Errorf("unsupported top-level xs:%s", c.XMLName.Local)
		}
	}
	for _, e := range elems {
		name, _ := e.attr("name")
		if err := s.define(s.global[name], e); err != nil {
			return nil, fmt.Errorf("element %s: %w", name, err)
		}
	}
	return s, nil
}

func xsOnly(n node) error {
	if n.XMLName.Space != xsNS {
		return fmt.Errorf("unsupported schema element %v", n.XMLName)
	}
	return nil
}

// simplePattern reads <xs:simpleType><xs:restriction base="xs:string">
// <xs:pattern value/></xs:restriction></xs:simpleType>.
func simplePattern(n node) (*regexp.Regexp, error) {
	if len(n.Children) != 1 || n.Children[0].XMLName.Local != "restriction" {
		return nil, errors.New("unsupported simple type: only a restriction")
	}
	r := n.Children[0]
	if base, _ := r.attr("base"); base != "xs:string" || len(r.Children) != 1 || r.Children[0].XMLName.Local != "pattern" {
		return nil, errors.New("unsupported simple type: only a pattern restricting xs:string")
	}
	v, _ := r.Children[0].attr("value")
	// XSD patterns are anchored; this one's syntax is also RE2's.
	return regexp.Compile(`^(?:` + v + `)$`)
}

// define fills d from the declaration n: its type attribute or its
// anonymous complex type.
func (s *Schema) define(d *elemDecl, n node) error {
	typ, hasType := n.attr("type")
	var ct *node
	for i, c := range n.Children {
		if err := xsOnly(c); err != nil {
			return err
		}
		switch c.XMLName.Local {
		case "complexType":
			ct = &n.Children[i]
		case "annotation":
		default:
			return fmt.Errorf("unsupported xs:%s in an element", c.XMLName.Local)
		}
	}
	switch {
	case hasType && typ == "xs:string":
		d.text, d.content = true, regexp.MustCompile(`^$`)
		return nil
	case hasType:
		t, ok := s.types[typ]
		if !ok {
			return fmt.Errorf("unknown or unsupported type %q", typ)
		}
		ct = &t
	case ct == nil:
		return errors.New("an element without a type (anyType) is not supported")
	}
	return s.complexType(d, *ct)
}

func (s *Schema) complexType(d *elemDecl, ct node) error {
	if m, _ := ct.attr("mixed"); m == "true" {
		d.mixed = true
	}
	d.attrs, d.children = map[string]attrDecl{}, map[string]*elemDecl{}
	expr := ""
	for _, c := range ct.Children {
		if err := xsOnly(c); err != nil {
			return err
		}
		switch c.XMLName.Local {
		case "attribute":
			name, _ := c.attr("name")
			use, _ := c.attr("use")
			a := attrDecl{required: use == "required"}
			switch typ, _ := c.attr("type"); {
			case typ == "xs:string" || typ == "":
			case s.simple[typ] != nil:
				a.pattern = s.simple[typ]
			default:
				return fmt.Errorf("attribute %s: unsupported type %q", name, typ)
			}
			d.attrs[name] = a
		case "sequence", "choice":
			if expr != "" {
				return errors.New("two content models")
			}
			e, err := s.particle(d, c)
			if err != nil {
				return err
			}
			expr = e
		case "annotation":
		default:
			return fmt.Errorf("unsupported xs:%s in a complex type", c.XMLName.Local)
		}
	}
	var err error
	d.content, err = regexp.Compile(`^(?:` + expr + `)$`)
	return err
}

// particle is a content model particle as a regular expression over the
// child element names, each followed by ';'.
func (s *Schema) particle(d *elemDecl, n node) (string, error) {
	var expr string
	switch n.XMLName.Local {
	case "element":
		var name string
		if ref, ok := n.attr("ref"); ok {
			g, ok := s.global[ref]
			if !ok {
				return "", fmt.Errorf("reference to undeclared element %q", ref)
			}
			name = ref
			d.children[name] = g
		} else {
			name, _ = n.attr("name")
			local := &elemDecl{name: name}
			if err := s.define(local, n); err != nil {
				return "", fmt.Errorf("element %s: %w", name, err)
			}
			d.children[name] = local
		}
		expr = regexp.QuoteMeta(name + ";")
	case "sequence", "choice":
		var parts []string
		for _, c := range n.Children {
			if err := xsOnly(c); err != nil {
				return "", err
			}
			if c.XMLName.Local == "annotation" {
				continue
			}
			p, err := s.particle(d, c)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		sep := ""
		if n.XMLName.Local == "choice" {
			sep = "|"
		}
		expr = strings.Join(parts, sep)
	default:
		return "", fmt.Errorf("unsupported particle xs:%s", n.XMLName.Local)
	}
	lo, hi := 1, "1"
	if v, ok := n.attr("minOccurs"); ok {
		var err error
		if lo, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("minOccurs %q", v)
		}
	}
	if v, ok := n.attr("maxOccurs"); ok {
		hi = v
	}
	switch {
	case hi == "unbounded":
		return fmt.Sprintf("(?:%s){%d,}", expr, lo), nil
	default:
		n, err := strconv.Atoi(hi)
		if err != nil {
			return "", fmt.Errorf("maxOccurs %q", hi)
		}
		return fmt.Sprintf("(?:%s){%d,%d}", expr, lo, n), nil
	}
}

// frame is an element being read.
type frame struct {
	decl     *elemDecl
	children strings.Builder
}

// Validate reads a whole document and reports its first departure from
// the schema, or from XML 1.0 well-formedness (encoding/xml refuses
// characters XML forbids).
func (s *Schema) Validate(r io.Reader) error {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	var stack []*frame
	roots := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != "" {
				return fmt.Errorf("element %s in namespace %q", t.Name.Local, t.Name.Space)
			}
			var d *elemDecl
			if len(stack) == 0 {
				if roots++; roots > 1 {
					return errors.New("more than one root element")
				}
				if d = s.global[t.Name.Local]; d == nil {
					return fmt.Errorf("root element %s is not declared", t.Name.Local)
				}
			} else {
				p := stack[len(stack)-1]
				if d = p.decl.children[t.Name.Local]; d == nil {
					return fmt.Errorf("element %s is not allowed in %s", t.Name.Local, p.decl.name)
				}
				p.children.WriteString(t.Name.Local + ";")
			}
			if err := checkAttrs(d, t.Attr); err != nil {
				return err
			}
			stack = append(stack, &frame{decl: d})
		case xml.EndElement:
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !f.decl.content.MatchString(f.children.String()) {
				return fmt.Errorf("the children of %s (%q) do not match its content model %s", f.decl.name,
					f.children.String(), f.decl.content)
			}
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) > 0 {
					return errors.New("text outside the root element")
				}
				continue
			}
			f := stack[len(stack)-1]
			if !f.decl.text && !f.decl.mixed && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("text in element %s, whose content is elements only", f.decl.name)
			}
		case xml.Directive:
			return errors.New("a DOCTYPE or other directive")
		}
	}
	if roots != 1 {
		return errors.New("no root element")
	}
	return nil
}

func checkAttrs(d *elemDecl, attrs []xml.Attr) error {
	seen := map[string]bool{}
	for _, a := range attrs {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			continue
		}
		if a.Name.Space != "" {
			return fmt.Errorf("%s: attribute %s:%s is not declared", d.name, a.Name.Space, a.Name.Local)
		}
		decl, ok := d.attrs[a.Name.Local]
		if !ok {
			return fmt.Errorf("%s: attribute %s is not declared", d.name, a.Name.Local)
		}
		if decl.pattern != nil && !decl.pattern.MatchString(a.Value) {
			return fmt.Errorf("%s: attribute %s=%q does not match %s", d.name, a.Name.Local, a.Value, decl.pattern)
		}
		seen[a.Name.Local] = true
	}
	for name, a := range d.attrs {
		if a.required && !seen[name] {
			return fmt.Errorf("%s: required attribute %s is missing", d.name, name)
		}
	}
	return nil
}
