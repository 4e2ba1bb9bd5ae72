package sip

import (
	"bytes"
	"log/slog"
	"net"
	"regexp"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// strictConn is the UDP listener as sipgo reads it. sipgo drops a datagram
// it cannot parse without a word, and the sender retransmits into silence;
// strictConn answers such a request with 400 Bad Request (RFC 3261 section
// 8.2.6: the response carries the Via, From, To, Call-ID and CSeq it could
// read) and keeps it from sipgo. Anything that is not a request is dropped.
type strictConn struct {
	net.PacketConn
	log    *slog.Logger
	parser *sip.Parser
}

// requestLineRe is "METHOD SP Request-URI SP SIP/2.0".
var requestLineRe = regexp.MustCompile(`^[A-Za-z]+ \S+ SIP/2\.0\r?$`)

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
		if _, perr := c.parser.ParseSIP(data); perr == nil {
			return n, addr, nil
		} else {
			c.reject(data, addr, perr)
		}
	}
}

// reject answers an unparseable request with 400.
func (c *strictConn) reject(data []byte, addr net.Addr, why error) {
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	if len(lines) == 0 || !requestLineRe.MatchString(lines[0]) {
		c.log.Debug("sip: dropped a datagram that is not a SIP request", "from", addr.String(), "bytes", len(data))
		return
	}
	res := sip.NewResponse(sip.StatusBadRequest, "Bad Request")
	copied := 0
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
		copied++
	}
	res.AppendHeader(sip.NewHeader("Warning", `399 stackbone "malformed request"`))
	res.SetBody(nil)
	if _, err := c.PacketConn.WriteTo([]byte(res.String()), addr); err != nil {
		c.log.Debug("sip: answering a malformed request", "error", err)
	}
	c.log.Info("sip: malformed request answered 400", "from", addr.String(), "bytes", len(data), "headersCopied", copied, "error", why.Error())
}
