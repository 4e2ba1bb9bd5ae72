package api

import (
	"bytes"
	"encoding/json"
	"errors"

	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TextError is text the box will not take: a NUL character or bytes that are
// not UTF-8, in a JSON string, a query parameter or the path. PostgreSQL
// stores neither, and encoding/json would quietly turn invalid bytes into
// U+FFFD, so two ids that differ only in such bytes would become one. Every
// edge checks before it acts (before any model call), and answers 400 naming
// the field.
type TextError struct {
	// Field is where the text is: a JSON path ("messages[2].content"), a
	// query parameter ("query parameter kind") or "the path".
	Field string
}

func (e *TextError) Error() string {
	return e.Field + " must be UTF-8 text without NUL characters"
}

// Unwrap makes a text error an ErrInvalidRequest.
func (e *TextError) Unwrap() error { return ErrInvalidRequest }

// CheckText returns a *TextError for the first string (key or value) of the
// JSON document raw that holds a NUL or invalid UTF-8, and nil otherwise,
// also when raw is not valid JSON (the decoder reports that).
func CheckText(raw []byte) error {
	// Fast path: valid bytes and no escaped NUL (a `\\u0000` only sends
	// the careful scan below, which reads escapes correctly).
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	var stack []frame
	path := func() string {
		var sb strings.Builder
		for _, f := range stack {
			if f.obj {
				if sb.Len() > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString(strings.ToValidUTF8(strings.ReplaceAll(f.key, "\x00", ""), "?"))
			} else {
				sb.WriteString("[" + strconv.Itoa(f.idx) + "]")
			}
		}
		if sb.Len() == 0 {
			return "the body"
		}
		return sb.String()
	}
	done := func() { // a value of the innermost container ended
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // EOF or a syntax error, which the decoder reports
		}
		end := dec.InputOffset()
		seg := raw[prev:end]
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			bad := strings.IndexByte(t, 0) >= 0 || !utf8.Valid(seg)
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				if bad {
					return &TextError{Field: "a member name in " + parentPath(path())}
				}
				continue
			}
			if bad {
				return &TextError{Field: path()}
			}
			done()
		default:
			done()
		}
	}
}

func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return "the body"
}

// checkURL returns a *TextError for a path or query parameter (name or
// value) of u that holds a NUL or invalid UTF-8.
func checkURL(u *url.URL) error {
	if !goodText(u.Path) {
		return &TextError{Field: "the path"}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return &TextError{Field: "the query string"}
	}
	for k, vs := range q {
		if !goodText(k) {
			return &TextError{Field: "a query parameter name"}
		}
		for _, v := range vs {
			if !goodText(v) {
				return &TextError{Field: "query parameter " + k}
			}
		}
	}
	return nil
}

func goodText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// ReadBody reads a request body of at most limit bytes and checks its text
// (CheckText). Errors: *http.MaxBytesError, *TextError, or the read error.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, err
	}
	return raw, CheckText(raw)
}

// isTextError reports a *TextError in err.
func isTextError(err error) bool {
	var te *TextError
	return errors.As(err, &te)
}
