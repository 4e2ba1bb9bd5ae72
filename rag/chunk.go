package rag

import (
	"strings"
	"unicode/utf8"
)

// separator is where text may be cut: at cut bytes into sep, so "\n#"
// leaves the heading's '#' with the text after it.
type separator struct {
	sep string
	cut int
}

var (
	textSeparators = []separator{{"\n\n", 2}, {"\n", 1}, {". ", 2}, {"? ", 2}, {"! ", 2}, {"; ", 2}, {" ", 1}}
	mdSeparators   = append([]separator{{"\n# ", 1}, {"\n## ", 1}, {"\n### ", 1}, {"\n#### ", 1}}, textSeparators...)
)

// splitText cuts text into chunks of at most size characters that end at
// the strongest boundary available (heading, paragraph, line, sentence,
// word), each starting with up to overlap characters of the one before so
// a sentence cut in two is whole in one of them.
func splitText(text string, size, overlap int, markdown bool) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	seps := textSeparators
	if markdown {
		seps = mdSeparators
	}
	pieces := splitPieces(text, size, seps)
	var chunks, cur []string
	curLen := 0
	flush := func() {
		if c := strings.TrimSpace(strings.Join(cur, "")); c != "" {
			chunks = append(chunks, c)
		}
	}
	for _, p := range pieces {
		pl := utf8.RuneCountInString(p)
		if curLen+pl > size && curLen > 0 {
			flush()
			// Keep the tail of the chunk as the start of the next one.
			for len(cur) > 0 && (curLen > overlap || curLen+pl > size) {
				curLen -= utf8.RuneCountInString(cur[0])
				cur = cur[1:]
			}
		}
		cur = append(cur, p)
		curLen += pl
	}
	flush()
	return chunks
}

// splitPieces cuts text at the first separator it holds, recursing with the
// weaker ones into pieces still over size, and at size characters when no
// separator is left. Concatenated, the pieces are text.
func splitPieces(text string, size int, seps []separator) []string {
	if utf8.RuneCountInString(text) <= size {
		return []string{text}
	}
	for i, s := range seps {
		if !strings.Contains(text, s.sep) {
			continue
		}
		var out []string
		rest := text
		for {
			j := strings.Index(rest, s.sep)
			if j < 0 {
				break
			}
			out = append(out, splitPieces(rest[:j+s.cut], size, seps[i+1:])...)
			rest = rest[j+s.cut:]
		}
		if rest != "" {
			out = append(out, splitPieces(rest, size, seps[i+1:])...)
		}
		return out
	}
	var out []string
	r := []rune(text)
	for len(r) > size {
		out = append(out, string(r[:size]))
		r = r[size:]
	}
	return append(out, string(r))
}
