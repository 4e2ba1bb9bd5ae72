package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Field is a JSON member that records whether it was present and whether it
// was null, so a route can tell "omitted" from "null" from a value.
type Field[T any] struct {
	Set  bool
	Null bool
	V    T
}

// UnmarshalJSON records presence and null; nested objects are as strict as
// the body (unknown members are errors).
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		f.Null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(&f.V)
}

// Value returns a pointer to the value, nil when omitted; null is an error
// for fields that must not be null.
func (f Field[T]) Value(name string) (*T, error) {
	if !f.Set {
		return nil, nil
	}
	if f.Null {
		return nil, fmt.Errorf("%s must not be null", name)
	}
	v := f.V
	return &v, nil
}

// QueryInt reads the integer query parameter name: def when absent, an
// error naming the range when it is not an integer from min to max.
func QueryInt(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%w: %s must be an integer from %d to %d", ErrInvalidRequest, name, min, max)
	}
	return n, nil
}

// DescribeDecode words a JSON decoding error of a nested value for a
// client, as Decode does for bodies.
func DescribeDecode(err error, limit int64) string { return describeDecode(err, limit) }
