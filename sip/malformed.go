package sip

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/emiago/sipgo/sip"
)

// maxMessage is the largest SIP message the box reads: a UDP datagram's
// payload (RFC 3261 section 18.1.1 lets a UAS receive up to 65,535 bytes),
// and the same bound for a message on a TCP stream.
const maxMessage = 65535

// strictConn is the UDP listener as sipgo reads it. sipgo drops a datagram
// it cannot parse without a word, and the sender retransmits into silence;
// strictConn answers such a request with 400 Bad Request (RFC 3261 section
// 8.2.6: the response carries the Via, From, To, Call-ID and CSeq it could
// read) and keeps it from sipgo. An ACK is never answered, and anything that
// is not a request is dropped.
type strictConn struct {
	net.PacketConn
	log    *slog.Logger
	parser *sip.Parser
}

func (c *strictConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if c.parser == nil {
		c.parser = sip.NewParser()
	}
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return n, addr, err
		}
		data := b[:n]
		if len(bytes.Trim(data, "\r\n")) == 0 {
			return n, addr, nil // keep-alive
		}
		res, pass := screen(c.parser, data)
		if pass {
			if t := tagNullFrom(c.parser, data); len(t) != n && len(t) <= len(b) {
				return copy(b, t), addr, nil
			}
			return n, addr, nil
		}
		if res != nil {
			if _, err := c.PacketConn.WriteTo(res, addr); err != nil {
				c.log.Debug("sip: answering a malformed request", "error", err)
			}
		}
		logMalformed(c.log, "udp", addr, len(data), res != nil)
	}
}

// WriteTo sends b without the From tags tagNullFrom gave (see rfc2543.go).
func (c *strictConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if _, err := c.PacketConn.WriteTo(untagNull(b), addr); err != nil {
		return 0, err
	}
	return len(b), nil
}

// logMalformed notes malformed input at debug level: who sent how much and
// whether it was answered, never its text (a peer must not be able to
// write into the box's logs).
func logMalformed(log *slog.Logger, network string, from net.Addr, size int, answered bool) {
	log.Debug("sip: malformed message", "transport", network, "from", from.String(), "bytes", size, "answered400", answered)
}

// requestLineRe is a request's start line, leniently: a method token,
// anything, a SIP version (screen then checks the exact form).
var requestLineRe = regexp.MustCompile(`^([A-Za-z0-9!%*_+.~'` + "`" + `-]+)[ \t]+(.*?)[ \t]+SIP/(\S+)[ \t]*\r?$`)

// strictRequestLineRe is RFC 3261's Request-Line: single spaces, no LWS in
// the Request-URI, version 2.0.
var strictRequestLineRe = regexp.MustCompile(`^[A-Za-z0-9!%*_+.~'` + "`" + `-]+ [^\s]+ SIP/2\.0$`)

// separators may not appear in a display name that is not quoted (RFC
// 3261 section 25.1: it is tokens and spaces). Other characters outside the
// token set (phones write unquoted UTF-8 names) are let through: they are
// not ambiguous.
const separators = `,;()<>@:\"/[]?={}`

// screen decides what to do with a message before sipgo parses it: pass it
// on, or keep it back and answer with res (nil: no answer, for anything
// that is not a request, and for an ACK, which is never answered). It
// answers 505 to another SIP version, 416 to a Request-URI scheme other
// than sip and sips, and 400 to a message sipgo's parser accepts although
// RFC 3261's grammar does not (extra spaces in the start line, headers in
// the Request-URI, an unquoted display name with separators, conflicting
// Content-Lengths; RFC 4475's lwsstart, trws, lwsruri, escruri, baddn,
// mcl01) or cannot parse.
func screen(p *sip.Parser, data []byte) (res []byte, pass bool) {
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	first, rest, _ := bytes.Cut(head, []byte("\r\n"))
	m := requestLineRe.FindSubmatch(first)
	if m == nil {
		if _, err := p.ParseSIP(data); err == nil {
			return nil, true // a response: sipgo matches it to its transaction
		}
		return nil, false
	}
	if strings.EqualFold(string(m[1]), "ACK") {
		if _, err := p.ParseSIP(data); err == nil && strictRequestLineRe.Match(first) {
			return nil, true
		}
		return nil, false
	}
	bad := func(code int, reason string) ([]byte, bool) { return refusal(data, code, reason), false }
	if string(m[3]) != "2.0" {
		return bad(sip.StatusVersionNotSupported, "Version Not Supported")
	}
	uri := string(m[2])
	if scheme, _, ok := strings.Cut(uri, ":"); ok && !strings.EqualFold(scheme, "sip") && !strings.EqualFold(scheme, "sips") &&
		!strings.ContainsAny(scheme, "<> ") {
		return bad(statusUnsupportedURIScheme, "Unsupported URI Scheme")
	}
	// Headers (?...) are not allowed in a Request-URI (RFC 3261 section
	// 19.1.1); a '?' in the user part is just a character.
	hostPart := uri[strings.LastIndex(uri, "@")+1:]
	if !strictRequestLineRe.Match(first) || strings.Contains(hostPart, "?") {
		return bad(sip.StatusBadRequest, "Bad Request-Line")
	}
	for _, l := range strings.Split(string(rest), "\r\n") {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "from", "f", "to", "t":
			if display, _, found := strings.Cut(value, "<"); found {
				display = strings.TrimSpace(display)
				if !strings.HasPrefix(display, `"`) && strings.ContainsAny(display, separators) {
					return bad(sip.StatusBadRequest, "Bad Display Name")
				}
			}
		}
	}
	if _, err := contentLength(head); err != nil && !errors.Is(err, errNoContentLength) {
		return bad(sip.StatusBadRequest, "Bad Content-Length")
	}
	if _, err := p.ParseSIP(data); err != nil {
		return bad(sip.StatusBadRequest, "Bad Request")
	}
	return nil, true
}

// refusal is the response with code to a request kept from sipgo, with the
// Via, From, To, Call-ID and CSeq it could read (RFC 3261 section 8.2.6);
// nil for an ACK or what is no request.
func refusal(data []byte, code int, reason string) []byte {
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	if len(lines) == 0 {
		return nil
	}
	m := requestLineRe.FindStringSubmatch(lines[0])
	if m == nil || strings.EqualFold(m[1], "ACK") {
		return nil
	}
	res := sip.NewResponse(code, reason)
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		var canonical string
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "via", "v":
			canonical = "Via"
		case "from", "f":
			canonical = "From"
		case "to", "t":
			canonical = "To"
		case "call-id", "i":
			canonical = "Call-ID"
		case "cseq":
			canonical = "CSeq"
		default:
			continue
		}
		res.AppendHeader(sip.NewHeader(canonical, strings.TrimSpace(value)))
	}
	if code == sip.StatusBadRequest {
		res.AppendHeader(sip.NewHeader("Warning", `399 stackbone "malformed request"`))
	}
	res.SetBody(nil)
	return []byte(res.String())
}

// strictListener is the TCP listener as sipgo reads it. sipgo's stream
// parser closes the connection on the first message it cannot parse, with
// no answer, and logs the raw message at error level. Each connection
// strictListener accepts frames the stream itself (the header ends at the
// blank line, the body is Content-Length long), answers a malformed request
// with 400 as over UDP, and hands sipgo only the messages that parse, so
// one bad request costs neither the connection nor the log.
type strictListener struct {
	net.Listener
	log *slog.Logger
}

func (l *strictListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &strictStream{Conn: c, log: l.log, parser: sip.NewParser()}, nil
}

// errNoContentLength: a message on a stream without Content-Length (RFC
// 3261 section 18.3 requires it there).
var errNoContentLength = errors.New("sip: no Content-Length on a stream")

// strictStream is one TCP connection, framed and checked message by
// message before sipgo reads it.
type strictStream struct {
	net.Conn
	log    *slog.Logger
	parser *sip.Parser

	in, out []byte
	buf     []byte
	wmu     sync.Mutex // our 400s and sipgo's writes do not interleave
}

// Write sends b without the From tags tagNullFrom gave (see rfc2543.go).
func (c *strictStream) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.Conn.Write(untagNull(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Read returns the next bytes sipgo may parse: keep-alive CRLFs and whole
// messages that parse.
func (c *strictStream) Read(b []byte) (int, error) {
	for len(c.out) == 0 {
		if err := c.frame(); err != nil {
			// The stream lost its framing: close it quietly after the 400,
			// as the peer's own end of the connection would.
			c.log.Debug("sip: closing a TCP connection that cannot be framed", "from", c.RemoteAddr().String(), "error", err)
			return 0, io.EOF
		}
		if len(c.out) > 0 {
			break
		}
		if c.buf == nil {
			c.buf = make([]byte, 16*1024)
		}
		n, err := c.Conn.Read(c.buf)
		c.in = append(c.in, c.buf[:n]...)
		if err != nil && n == 0 {
			return 0, err
		}
	}
	n := copy(b, c.out)
	c.out = c.out[n:]
	if len(c.out) == 0 {
		c.out = nil
	}
	return n, nil
}

// frame moves what c.in holds of whole messages to c.out (or answers them
// 400); it returns an error when the stream cannot be framed any more (the
// connection then closes, after the 400).
func (c *strictStream) frame() error {
	for len(c.in) > 0 {
		// CRLF keep-alives between messages (RFC 5626 section 3.5.1) go to
		// sipgo, which answers the double CRLF ping.
		if c.in[0] == '\r' || c.in[0] == '\n' {
			i := 0
			for i < len(c.in) && (c.in[i] == '\r' || c.in[i] == '\n') {
				i++
			}
			c.out = append(c.out, c.in[:i]...)
			c.in = c.in[i:]
			continue
		}
		end := bytes.Index(c.in, []byte("\r\n\r\n"))
		if end < 0 {
			if len(c.in) > maxMessage {
				c.refuse(c.in, errors.New("header too long"))
				return errors.New("sip: a message header on the stream is too long")
			}
			return nil // wait for more
		}
		headLen := end + 4
		length, err := contentLength(c.in[:end])
		if err != nil {
			c.refuse(c.in[:headLen], err)
			if errors.Is(err, errNoContentLength) {
				// Without a length the body, if any, cannot be told from
				// the next message: assume none, as most peers send none.
				c.in = c.in[headLen:]
				continue
			}
			return err
		}
		total := headLen + length
		if total > maxMessage {
			c.refuse(c.in[:headLen], errors.New("message too long"))
			return errors.New("sip: a message on the stream is too long")
		}
		if len(c.in) < total {
			return nil
		}
		msg := c.in[:total]
		if res, pass := screen(c.parser, msg); pass {
			c.out = append(c.out, tagNullFrom(c.parser, msg)...)
		} else {
			c.answer(msg, res)
		}
		c.in = c.in[total:]
	}
	c.in = nil
	return nil
}

func (c *strictStream) refuse(msg []byte, why error) {
	reason := "Bad Request"
	if errors.Is(why, errNoContentLength) {
		reason = "Missing Content-Length"
	}
	c.answer(msg, refusal(msg, sip.StatusBadRequest, reason))
}

// answer sends res (if any) for a message kept from sipgo.
func (c *strictStream) answer(msg, res []byte) {
	if res != nil {
		if _, err := c.Write(res); err != nil {
			c.log.Debug("sip: answering a malformed request", "error", err)
		}
	}
	logMalformed(c.log, "tcp", c.RemoteAddr(), len(msg), res != nil)
}

// contentLength reads the Content-Length of a message header (errNoContentLength
// when absent; another error when it is not a number, after which the
// stream cannot be framed).
func contentLength(head []byte) (int, error) {
	found := -1
	for _, l := range strings.Split(string(head), "\r\n")[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length", "l":
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return 0, errors.New("sip: bad Content-Length")
			}
			if found >= 0 && found != n {
				return 0, errors.New("sip: conflicting Content-Length")
			}
			found = n
		}
	}
	if found < 0 {
		return 0, errNoContentLength
	}
	return found, nil
}
