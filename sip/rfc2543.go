package sip

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// RFC 2543 peers send no From tag (RFC 3261 section 12.2.1.1 calls theirs
// a null tag), and sipgo's transaction layer refuses a request without one
// when it keys an RFC 2543 transaction (no z9hG4bK branch) or matches a
// dialog. The box's transports give such a request a From tag before sipgo
// reads it, derived from the Call-ID so every request of the dialog (the
// INVITE's retransmissions, its ACK, the BYE) gets the same one, and take
// it out of everything the box sends back: the peer sees its own From in
// every response (section 8.2.6.2) and no tag it never sent in the To of
// the box's requests.

// nullTagPrefix starts the tags the box gives null-tag requests; the hex
// that follows is part of the Call-ID's SHA-256.
const nullTagPrefix = "sb2543-"

// nullTagRe is such a tag as a header parameter, in what the box sends.
var nullTagRe = regexp.MustCompile(`;tag=` + nullTagPrefix + `[0-9a-f]{16}`)

// tagNullFrom returns msg with a From tag added when msg is a request that
// parses and whose From has none; otherwise msg itself.
func tagNullFrom(p *sip.Parser, msg []byte) []byte {
	head, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	at := fromEnd(head)
	if at < 0 || bytes.Contains(head[:at], []byte(";tag=")) && fromHasTag(head[:at]) {
		return msg // the usual case: no parse
	}
	m, err := p.ParseSIP(msg)
	if err != nil {
		return msg
	}
	req, ok := m.(*sip.Request)
	if !ok || req.From() == nil || req.CallID() == nil {
		return msg
	}
	if _, ok := req.From().Params.Get("tag"); ok {
		return msg
	}
	sum := sha256.Sum256([]byte(req.CallID().Value()))
	tag := ";tag=" + nullTagPrefix + hex.EncodeToString(sum[:8])
	out := make([]byte, 0, len(msg)+len(tag))
	out = append(out, msg[:at]...)
	out = append(out, tag...)
	return append(out, msg[at:]...)
}

// fromEnd is the offset in head where the From header's value ends (a
// folded header continues on lines that start with white space), -1
// without a From.
func fromEnd(head []byte) int {
	at, inFrom, pos := -1, false, 0
	for i, l := range bytes.SplitAfter(head, []byte("\r\n")) {
		if i > 0 && len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
			if inFrom {
				at = pos + len(bytes.TrimRight(l, " \t\r\n"))
			}
		} else {
			name, _, ok := bytes.Cut(l, []byte(":"))
			n := strings.ToLower(strings.TrimSpace(string(name)))
			inFrom = i > 0 && ok && (n == "from" || n == "f")
			if inFrom {
				at = pos + len(bytes.TrimRight(l, " \t\r\n"))
			}
		}
		pos += len(l)
	}
	return at
}

// fromHasTag reports whether the last From line up to its end (upTo) has
// ";tag=" after its address: outside angle brackets, or with no brackets.
func fromHasTag(upTo []byte) bool {
	line := upTo[bytes.LastIndex(upTo, []byte("\n"))+1:]
	if i := bytes.LastIndexByte(line, '>'); i >= 0 {
		line = line[i:]
	}
	return bytes.Contains(line, []byte(";tag="))
}

// untagNull takes the tags tagNullFrom gave out of a message the box sends.
func untagNull(msg []byte) []byte {
	head, body, found := bytes.Cut(msg, []byte("\r\n\r\n"))
	if !bytes.Contains(head, []byte(";tag="+nullTagPrefix)) {
		return msg
	}
	out := nullTagRe.ReplaceAll(head, nil)
	if found {
		out = append(append(out, "\r\n\r\n"...), body...)
	}
	return out
}
