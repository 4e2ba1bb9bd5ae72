package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Validator checks real answers of /api routes against a document.
type Validator struct {
	doc     map[string]any
	schemas map[string]any
	mux     *http.ServeMux
}

// NewValidator reads an OpenAPI document (Document's output).
func NewValidator(document []byte) (*Validator, error) {
	v := &Validator{mux: http.NewServeMux()}
	if err := json.Unmarshal(document, &v.doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	comps, _ := v.doc["components"].(map[string]any)
	v.schemas, _ = comps["schemas"].(map[string]any)
	paths, _ := v.doc["paths"].(map[string]any)
	for path, ops := range paths {
		for method := range ops.(map[string]any) {
			// The router finds the operation of a request path the way
			// the box's own router does.
			v.mux.Handle(strings.ToUpper(method)+" "+path, http.NotFoundHandler())
		}
	}
	return v, nil
}

// Pattern is the documented route of a request path (escaped, as sent),
// "" when none matches.
func (v *Validator) Pattern(method, path string) string {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	r := &http.Request{Method: method, Host: "box", URL: u}
	_, pattern := v.mux.Handler(r)
	return pattern
}

// Response checks an answer of method path (escaped, as sent): its status must be documented
// for the route, and its body must match that status's schema (an error's
// code among the route's codes for the status). It returns nil for a path
// outside /api.
func (v *Validator) Response(method, path string, status int, body []byte) error {
	if !strings.HasPrefix(path, "/api/") {
		return nil
	}
	pattern := v.Pattern(method, path)
	if pattern == "" {
		// An unknown route (or method) answers an error in the envelope.
		var env struct {
			Data  any `json:"data"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if status < 400 || json.Unmarshal(body, &env) != nil || env.Data != nil || env.Error == nil || env.Error.Code == "" {
			return fmt.Errorf("%s %s is not in the document (openapi/routes.go), yet answered %d %s", method, path, status, clip(body))
		}
		return nil
	}
	m, p, _ := strings.Cut(pattern, " ")
	op := v.doc["paths"].(map[string]any)[p].(map[string]any)[strings.ToLower(m)].(map[string]any)
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if ref, isRef := resp["$ref"].(string); isRef {
		comps, _ := v.doc["components"].(map[string]any)
		shared, _ := comps["responses"].(map[string]any)
		resp, ok = shared[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	if !ok {
		return fmt.Errorf("%s: status %d is not documented in openapi/routes.go (body %s)", pattern, status, clip(body))
	}
	content, _ := resp["content"].(map[string]any)
	js, ok := content["application/json"].(map[string]any)
	if !ok {
		return nil // no body, or a file
	}
	var val any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&val); err != nil {
		return fmt.Errorf("%s %d: the body is not JSON: %s", pattern, status, clip(body))
	}
	if err := v.check(js["schema"], val, ""); err != nil {
		return fmt.Errorf("%s %d: %w (body %s)", pattern, status, err, clip(body))
	}
	return nil
}

// Request checks a JSON request body of method path against the route's
// request schema.
func (v *Validator) Request(method, path string, body []byte) error {
	pattern := v.Pattern(method, path)
	if pattern == "" {
		return fmt.Errorf("%s %s is not in the document", method, path)
	}
	m, p, _ := strings.Cut(pattern, " ")
	op := v.doc["paths"].(map[string]any)[p].(map[string]any)[strings.ToLower(m)].(map[string]any)
	rb, _ := op["requestBody"].(map[string]any)
	content, _ := rb["content"].(map[string]any)
	js, ok := content["application/json"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s takes no JSON body", pattern)
	}
	var val any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&val); err != nil {
		return fmt.Errorf("%s: the body is not JSON", pattern)
	}
	if err := v.check(js["schema"], val, ""); err != nil {
		return fmt.Errorf("%s: %w", pattern, err)
	}
	return nil
}

// check is a JSON Schema check for the keywords the document uses: $ref,
// type, properties, required, additionalProperties, items, enum, oneOf and
// allOf.
func (v *Validator) check(schema any, val any, at string) error {
	s, _ := schema.(map[string]any)
	if s == nil {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok {
		return v.check(v.schemas[strings.TrimPrefix(ref, "#/components/schemas/")], val, at)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := v.check(sub, val, at); err != nil {
				return err
			}
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, sub := range one {
			if v.check(sub, val, at) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s matches %d of the oneOf schemas, not one", name(at), n)
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(val) }) {
		return fmt.Errorf("%s is %v, not one of %v", name(at), val, enum)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(t, val) }) {
			return fmt.Errorf("%s is %s, want %s", name(at), kind(val), strings.Join(types, " or "))
		}
	}
	switch val := val.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := val[r.(string)]; !ok {
					return fmt.Errorf("%s lacks the required member %s", name(at), r)
				}
			}
		}
		for k, x := range val {
			if sub, ok := props[k]; ok {
				if err := v.check(sub, x, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s has the undocumented member %s", name(at), k)
				}
			case map[string]any:
				if err := v.check(ap, x, at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, x := range val {
			if err := v.check(s["items"], x, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func isType(t string, val any) bool {
	switch t {
	case "null":
		return val == nil
	case "object":
		_, ok := val.(map[string]any)
		return ok
	case "array":
		_, ok := val.([]any)
		return ok
	case "string":
		_, ok := val.(string)
		return ok
	case "boolean":
		_, ok := val.(bool)
		return ok
	case "number":
		_, ok := val.(json.Number)
		return ok
	case "integer":
		n, ok := val.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func kind(val any) string {
	switch val.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

func name(at string) string {
	if at == "" {
		return "the body"
	}
	return "body" + at
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
