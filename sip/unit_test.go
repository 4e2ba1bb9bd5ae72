package sip

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
)

func invite(t *testing.T, from string, headers ...sip.Header) *sip.Request {
	t.Helper()
	var u sip.Uri
	if err := sip.ParseUri("sip:100@127.0.0.1", &u); err != nil {
		t.Fatal(err)
	}
	req := sip.NewRequest(sip.INVITE, u)
	var fu sip.Uri
	if err := sip.ParseUri(from, &fu); err != nil {
		t.Fatal(err)
	}
	req.AppendHeader(&sip.FromHeader{Address: fu, Params: sip.NewParams()})
	for _, h := range headers {
		req.AppendHeader(h)
	}
	return req
}

// The caller's number is the identity only when it is a number the caller
// did not withhold; the asserted identity wins over From.
func TestPhoneNumber(t *testing.T) {
	for name, c := range map[string]struct {
		req  *sip.Request
		want string
	}{
		"from":        {invite(t, "sip:+34600111222@10.0.0.1"), "+34600111222"},
		"national":    {invite(t, "sip:0600111222@10.0.0.1"), "0600111222"},
		"asserted":    {invite(t, "sip:trunk@10.0.0.1", sip.NewHeader("P-Asserted-Identity", "<sip:+15550123@carrier>")), "+15550123"},
		"anonymous":   {invite(t, "sip:anonymous@anonymous.invalid"), ""},
		"privacy id":  {invite(t, "sip:+34600111222@10.0.0.1", sip.NewHeader("Privacy", "id")), ""},
		"a user name": {invite(t, "sip:alice@10.0.0.1"), ""},
	} {
		if got := phoneNumber(c.req); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

func TestRoutes(t *testing.T) {
	tr, err := newInboundTrunk(config.InboundTrunk{Name: "t", Sources: []string{"10.0.0.0/8"}, DefaultAgent: "front",
		Routes: []config.Route{{Number: "+1 555 0100", Agent: "sales"}, {Number: "+44*", Agent: "uk"}}})
	if err != nil {
		t.Fatal(err)
	}
	for number, want := range map[string]string{"+15550100": "sales", "+15550100 ": "sales", "+442071234567": "uk", "999": "front"} {
		if got := tr.route(number); got != want {
			t.Errorf("route(%q) = %q, want %q", number, got, want)
		}
	}
	tr.DefaultAgent = ""
	if got := tr.route("999"); got != "" {
		t.Errorf("no default: %q", got)
	}
}

func TestNegotiateTimer(t *testing.T) {
	s := &Server{cfg: config.SIP{SessionTimer: 30 * time.Minute}, minSE: 90 * time.Second}
	for name, c := range map[string]struct {
		headers  []sip.Header
		interval time.Duration
		refr     string
		err      bool
	}{
		"nothing asked":       {nil, 30 * time.Minute, "uas", false},
		"supports timer":      {[]sip.Header{sip.NewHeader("Supported", "replaces, timer")}, 30 * time.Minute, "uac", false},
		"shorter interval":    {[]sip.Header{sip.NewHeader("Session-Expires", "600;refresher=uas"), sip.NewHeader("Supported", "timer")}, 10 * time.Minute, "uas", false},
		"longer is capped":    {[]sip.Header{sip.NewHeader("Session-Expires", "7200")}, 30 * time.Minute, "uas", false},
		"compact form":        {[]sip.Header{sip.NewHeader("x", "900;refresher=uac"), sip.NewHeader("k", "timer")}, 15 * time.Minute, "uac", false},
		"too small":           {[]sip.Header{sip.NewHeader("Session-Expires", "30")}, 0, "", true},
		"garbage":             {[]sip.Header{sip.NewHeader("Session-Expires", "soon")}, 0, "", true},
		"uac without support": {[]sip.Header{sip.NewHeader("Session-Expires", "600;refresher=uac")}, 10 * time.Minute, "uas", false},
	} {
		got, err := s.negotiateTimer(invite(t, "sip:1@x", c.headers...))
		if (err != nil) != c.err || got.interval != c.interval || got.refresher != c.refr || got.weRefresh != (c.refr == "uas") {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
}

// A null From tag is given the same tag on every request of its Call-ID,
// wherever the From header ends (folded, compact, without brackets), and
// the tag never leaves the box; a From with a tag is left as it is.
func TestNullFromTag(t *testing.T) {
	p := sip.NewParser()
	msg := func(from string) []byte {
		return []byte("INVITE sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1\r\n" + from +
			"\r\nTo: <sip:b@example.com>\r\nCall-ID: abc@192.0.2.1\r\nCSeq: 1 INVITE\r\nContent-Length: 4\r\n\r\nbody")
	}
	cases := []struct{ from, tagged string }{
		{"From: <sip:a@example.com>", "From: <sip:a@example.com>;tag=sb2543-"},
		{"f: sip:a@example.com ", "f: sip:a@example.com;tag=sb2543-"},
		{"From: \"A\"\r\n <sip:a@example.com>", "From: \"A\"\r\n <sip:a@example.com>;tag=sb2543-"},
	}
	var tags []string
	for _, c := range cases {
		got := tagNullFrom(p, msg(c.from))
		i := bytes.Index(got, []byte(c.tagged))
		if i < 0 {
			t.Fatalf("%q tagged as %q", c.from, got)
		}
		tag := string(got[i+len(c.tagged)-len("sb2543-") : i+len(c.tagged)+16])
		tags = append(tags, tag)
		if !bytes.HasSuffix(got, []byte("\r\n\r\nbody")) {
			t.Fatalf("body changed: %q", got)
		}
		if back := untagNull(got); !bytes.Equal(back, msg(strings.TrimRight(c.from, " "))) && !bytes.Equal(back, msg(c.from)) {
			t.Fatalf("untagged %q, want %q", back, msg(c.from))
		}
	}
	if tags[0] != tags[1] || tags[1] != tags[2] {
		t.Fatalf("tags %q differ for one Call-ID", tags)
	}
	for _, from := range []string{"From: <sip:a@example.com>;tag=1928301774", "From: sip:a@example.com;tag=x", "f: \"A;tag=no\" <sip:a@example.com>;tag=z"} {
		if got := tagNullFrom(p, msg(from)); !bytes.Equal(got, msg(from)) {
			t.Fatalf("%q changed to %q", from, got)
		}
	}
	resp := []byte("SIP/2.0 200 OK\r\nFrom: <sip:a@example.com>;tag=" + tags[0] + "\r\nTo: <sip:b@example.com>;tag=box1\r\n\r\nv=0 ;tag=" + tags[0])
	want := []byte("SIP/2.0 200 OK\r\nFrom: <sip:a@example.com>\r\nTo: <sip:b@example.com>;tag=box1\r\n\r\nv=0 ;tag=" + tags[0])
	if got := untagNull(resp); !bytes.Equal(got, want) {
		t.Fatalf("untagged %q, want %q", got, want)
	}
}
