package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/configs"
)

func TestDevConfigDeclaresTrunksAndReceptionist(t *testing.T) {
	c, err := config.Parse(configs.Dev)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := c.Agents["receptionist"]
	if !ok || a.Greeting == "" || a.Memory == nil || a.Memory.IdentityKey != "phoneNumber" ||
		a.Memory.Read == nil || !*a.Memory.Read || a.Memory.Save == nil || !*a.Memory.Save {
		t.Fatalf("receptionist: %+v", a)
	}
	s := c.SIP
	if s.Addr != config.DefaultSIPAddr || s.MediaTimeout != 30*time.Second || s.MaxCallDuration != time.Hour || s.SessionTimer != 30*time.Minute {
		t.Fatalf("sip: %+v", s)
	}
	if len(s.Trunks.Inbound) != 1 || s.Trunks.Inbound[0].Sources[0] != "127.0.0.1" ||
		s.Trunks.Inbound[0].Routes[0].Number != "*" || s.Trunks.Inbound[0].Routes[0].Agent != "receptionist" {
		t.Fatalf("inbound trunk: %+v", s.Trunks.Inbound)
	}
	if len(s.Trunks.Outbound) != 1 || !strings.HasPrefix(s.Trunks.Outbound[0].Proxy, "127.0.0.1:") {
		t.Fatalf("outbound trunk: %+v", s.Trunks.Outbound)
	}
}

func TestSIPValidation(t *testing.T) {
	const agents = "agents:\n  a: {model: openai/x}\n"
	good := agents + `sip:
  addr: 0.0.0.0:5060
  rtpPortMin: 10000
  rtpPortMax: 10100
  mediaTimeout: 20s
  sessionTimer: -1s
  trunks:
    inbound:
      - {name: carrier, sources: [10.0.0.0/8, "::1"], username: u, passwordEnv: P, routes: [{number: "+1 (555) 0100", agent: a}, {number: "+44*", agent: a}]}
      - {name: pbx, username: box, password: pw, defaultAgent: a}
    outbound:
      - {name: out, proxy: "sip.example.net:5060", transport: tcp, callerNumber: "+15550100"}
`
	if _, err := config.Parse([]byte(good)); err != nil {
		t.Fatalf("good config refused: %v", err)
	}
	for name, y := range map[string]string{
		"bad addr":            "sip: {addr: nohost}\n",
		"half port range":     "sip: {rtpPortMin: 10000}\n",
		"tiny port range":     "sip: {rtpPortMin: 10000, rtpPortMax: 10001}\n",
		"negative max calls":  "sip: {maxCalls: -1}\n",
		"unitless timeout":    "sip: {mediaTimeout: 30}\n",
		"short session timer": "sip: {sessionTimer: 30s}\n",
		"open trunk":          agents + "sip: {trunks: {inbound: [{name: t, defaultAgent: a}]}}\n",
		"bad source":          agents + "sip: {trunks: {inbound: [{name: t, sources: [localhost], defaultAgent: a}]}}\n",
		"no password":         agents + "sip: {trunks: {inbound: [{name: t, username: u, defaultAgent: a}]}}\n",
		"unknown agent":       agents + "sip: {trunks: {inbound: [{name: t, sources: [127.0.0.1], routes: [{number: '*', agent: nobody}]}]}}\n",
		"unknown default":     agents + "sip: {trunks: {inbound: [{name: t, sources: [127.0.0.1], defaultAgent: nobody}]}}\n",
		"no route":            agents + "sip: {trunks: {inbound: [{name: t, sources: [127.0.0.1]}]}}\n",
		"bad route":           agents + "sip: {trunks: {inbound: [{name: t, sources: [127.0.0.1], routes: [{number: 'abc', agent: a}]}]}}\n",
		"duplicate trunk":     agents + "sip: {trunks: {inbound: [{name: t, sources: [127.0.0.1], defaultAgent: a}, {name: t, sources: [127.0.0.2], defaultAgent: a}]}}\n",
		"bad trunk name":      agents + "sip: {trunks: {outbound: [{name: Out Trunk, proxy: '127.0.0.1:5070'}]}}\n",
		"no proxy port":       "sip: {trunks: {outbound: [{name: o, proxy: 127.0.0.1}]}}\n",
		"bad transport":       "sip: {trunks: {outbound: [{name: o, proxy: '127.0.0.1:5070', transport: tls}]}}\n",
		"bad caller":          "sip: {trunks: {outbound: [{name: o, proxy: '127.0.0.1:5070', callerNumber: 'a b'}]}}\n",
		"unknown sip key":     "sip: {adress: 127.0.0.1:5060}\n",
	} {
		if _, err := config.Parse([]byte(y)); !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestSIPApplyEnv(t *testing.T) {
	c, err := config.Parse([]byte("agents:\n  a: {model: openai/x}\nsip:\n  trunks:\n    inbound: [{name: t, username: u, passwordEnv: IN_PW, defaultAgent: a}]\n    outbound: [{name: o, proxy: '127.0.0.1:5070', username: u, passwordEnv: OUT_PW}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"IN_PW": "in", "OUT_PW": "out"}
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.SIP.Addr != config.DefaultSIPAddr || c.SIP.Trunks.Inbound[0].Password != "in" || c.SIP.Trunks.Outbound[0].Password != "out" {
		t.Fatalf("%+v", c.SIP)
	}
	env["STACKBONE_SIP_ADDR"] = "127.0.0.1:0"
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil || c.SIP.Addr != "127.0.0.1:0" {
		t.Fatalf("STACKBONE_SIP_ADDR: %v %q", err, c.SIP.Addr)
	}
	env["STACKBONE_SIP_ADDR"] = "5060"
	if err := c.ApplyEnv(func(k string) string { return env[k] }); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("bad STACKBONE_SIP_ADDR: %v", err)
	}
}

func TestNormalizeNumberAndSource(t *testing.T) {
	if got := config.NormalizeNumber(" +1 (555) 010-0.1 "); got != "+155501001" {
		t.Fatalf("NormalizeNumber: %q", got)
	}
	p, err := config.ParseSource("127.0.0.1")
	if err != nil || p.String() != "127.0.0.1/32" {
		t.Fatalf("ParseSource: %v %v", p, err)
	}
	if p, err := config.ParseSource("10.1.2.3/8"); err != nil || p.String() != "10.0.0.0/8" {
		t.Fatalf("ParseSource CIDR: %v %v", p, err)
	}
}
