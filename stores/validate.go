package stores

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ValidatePath checks a memory path: it starts with "/", its segments are
// separated by single slashes and none is empty, "." or ".."; no "~",
// backslash, control character or invalid UTF-8; at most MaxPathBytes
// bytes and MaxSegmentBytes a segment. field names the request field.
func ValidatePath(field, p string) error {
	if p == "" {
		return invalid(field, "is required")
	}
	if !strings.HasPrefix(p, "/") {
		return invalid(field, `must start with "/" (such as /releases/versioning.md)`)
	}
	if strings.HasSuffix(p, "/") {
		return invalid(field, `must name a memory, not a folder: it cannot end with "/"`)
	}
	return checkSegments(field, p[1:])
}

// checkSegments checks the slash-separated segments of a path without its
// leading slash.
func checkSegments(field, rest string) error {
	if len(rest)+1 > MaxPathBytes {
		return invalid(field, "is longer than %d bytes", MaxPathBytes)
	}
	if !utf8.ValidString(rest) {
		return invalid(field, "is not valid UTF-8")
	}
	for _, r := range rest {
		switch {
		case r == '\\':
			return invalid(field, "must not contain a backslash")
		case r == '~':
			return invalid(field, `must not contain "~"`)
		case unicode.IsControl(r):
			return invalid(field, "must not contain control characters")
		}
	}
	for _, seg := range strings.Split(rest, "/") {
		switch {
		case seg == "":
			return invalid(field, "must not have an empty segment (//)")
		case seg == "." || seg == "..":
			return invalid(field, `must not have a "." or ".." segment`)
		case len(seg) > MaxSegmentBytes:
			return invalid(field, "has a segment longer than %d bytes", MaxSegmentBytes)
		}
	}
	return nil
}

// NormalizePrefix checks a folder prefix and returns it ending in "/": ""
// and "/" are the root; "/releases" means the folder "/releases/", since
// prefixes match whole segments.
func NormalizePrefix(field, p string) (string, error) {
	if p == "" || p == "/" {
		return "/", nil
	}
	if !strings.HasPrefix(p, "/") {
		return "", invalid(field, `must start with "/" (such as /releases/)`)
	}
	p = strings.TrimSuffix(p, "/")
	if err := checkSegments(field, p[1:]); err != nil {
		return "", err
	}
	return p + "/", nil
}

// prefixEnd is the first path after every path beginning with prefix
// (which ends in "/"): in byte order "/" is followed by "0".
func prefixEnd(prefix string) string { return prefix[:len(prefix)-1] + "0" }

func checkSummary(s string) error {
	if strings.TrimSpace(s) == "" {
		return invalid("summary", "is required")
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return invalid("summary", "must be valid UTF-8 text without NUL")
	}
	if n := utf8.RuneCountInString(s); n > MaxSummaryChars {
		return invalid("summary", "has %d characters; the most is %d", n, MaxSummaryChars)
	}
	return nil
}

func checkContent(s string) error {
	if strings.TrimSpace(s) == "" {
		return invalid("content", "is required and must not be empty")
	}
	if len(s) > MaxContentBytes {
		return invalid("content", "is %d bytes; the most is %d (100 KiB): split it into several memories", len(s), MaxContentBytes)
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return invalid("content", "must be valid UTF-8 text without NUL")
	}
	return nil
}

func checkName(s string) error {
	if strings.TrimSpace(s) == "" {
		return invalid("name", "is required")
	}
	if n := utf8.RuneCountInString(s); n > MaxNameChars {
		return invalid("name", "has %d characters; the most is %d", n, MaxNameChars)
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return invalid("name", "must be one line of valid UTF-8 text")
	}
	return nil
}

func checkDescription(s string) error {
	if n := utf8.RuneCountInString(s); n > MaxDescriptionChars {
		return invalid("description", "has %d characters; the most is %d", n, MaxDescriptionChars)
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return invalid("description", "must be valid UTF-8 text without NUL")
	}
	return nil
}

func checkSHA(field, s string) error {
	if len(s) != 64 {
		return invalid(field, "must be the 64 hex digits of a SHA-256 read from the memory")
	}
	if _, err := hex.DecodeString(s); err != nil || strings.ToLower(s) != s {
		return invalid(field, "must be the 64 lowercase hex digits of a SHA-256")
	}
	return nil
}

// SHA256 is the content hash the API returns and compare-and-swap takes.
func SHA256(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

// Slugify makes a slug from a name: lowercase ASCII letters and digits
// separated by single dashes, accents dropped, at most 60 characters.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(name) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		r = unicode.ToLower(r)
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	slug := b.String()
	if len(slug) > 60 {
		slug = strings.TrimRight(slug[:60], "-")
	}
	if slug == "" {
		return "store"
	}
	return slug
}

// Page checks a page size: 0 means DefaultPageSize; 1 to MaxPageSize.
func Page(limit int) (int, error) {
	if limit == 0 {
		return DefaultPageSize, nil
	}
	if limit < 1 || limit > MaxPageSize {
		return 0, invalid("limit", "must be 1 to %d", MaxPageSize)
	}
	return limit, nil
}

// cursor is the position after the last item of a page. Opaque to callers.
type cursor struct {
	// P is a path (listings, alphabetical lists).
	P string `json:"p,omitempty"`
	// S is a version sequence number.
	S int64 `json:"s,omitempty"`
	// T and I are a time and an id (stores, updated lists, reflections).
	T string `json:"t,omitempty"`
	I string `json:"i,omitempty"`
	// O is an offset (search).
	O int `json:"o,omitempty"`
	// K names the list, so a cursor of one list is refused by another.
	K string `json:"k"`
}

func (c cursor) encode() *string {
	b, _ := json.Marshal(c)
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

func decodeCursor(s, kind string) (cursor, bool, error) {
	if s == "" {
		return cursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err != nil || len(s) > 4096 || json.Unmarshal(b, &c) != nil || c.K != kind {
		return cursor{}, false, invalid("cursor", "is not a next_cursor of this list")
	}
	return c, true, nil
}
