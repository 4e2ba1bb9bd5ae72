package sip_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/pgtest"
)

// The torture messages of RFC 4475 (SIP Torture Test Messages) that reach
// a UAS, adapted to reach the box: the top Via is the test's own address
// ({{VIA}}: transport and host:port), {{BOX}} is the box's address, and
// {{CL}} is the length of the body after the blank line. Everything the
// RFC tortures (folding, escapes, odd tokens, bad values) is kept. The box
// routes no number here, so a valid INVITE ends in 404 Not Found: it was
// parsed, validated and routed.
type tortureCase struct {
	name string // the RFC's name for the message
	raw  string
	// want is the status of the final answer; 0 means no answer at all.
	want int
	// udpOnly: the case is about datagram framing (a stream waits for the
	// rest of the message).
	udpOnly bool
	// gap says why the box does not pass the case yet.
	gap string
}

// tortureSDP is the offer most of the messages carry, from address ip.
func tortureSDP(ip string) string {
	return "v=0\no=mhandley 29739 7272939 IN IP4 " + ip + "\ns=-\nc=IN IP4 " + ip + "\nt=0 0\nm=audio 49217 RTP/AVP 0\n"
}

var tortureCases = []tortureCase{
	// 3.1.1 Valid messages.
	// Its To has a tag: a request within a dialog the box does not have.
	{name: "wsinv", want: 481, raw: `INVITE sip:vivekg@chair-dnrc.example.com;unknownparam SIP/2.0
TO :
 sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n
from   : "J Rosenberg \\\""       <sip:jdrosen@example.com>
  ;
  tag = 98asjd8
MaX-fOrWaRdS: 0068
Call-ID: wsinv.ndaksdj@192.0.2.1
Content-Length   : {{CL}}
cseq: 0009
  INVITE
Via  : {{VIA}};branch=z9hG4bKkdjuw
s :
NewFangledHeader:   newfangled value
 continued newfangled value
UnknownHeaderWithUnusualValue: ;;,,;;,;
Content-Type: application/sdp
Route:
 <sip:services.example.com;lr;unknownwith=value;unknown-no-value>
v:  SIP  / 2.0  / UDP  192.0.2.2;branch=390skdjuw
m:"Quoted string \"\"" <sip:jdrosen@example.com> ; newparam =
      newvalue ;
  secondparam ; q = 0.33

v=0
o=mhandley 29739 7272939 IN IP4 192.0.2.3
s=-
c=IN IP4 192.0.2.4
t=0 0
m=audio 49217 RTP/AVP 0 12
m=video 3227 RTP/AVP 31
a=rtpmap:31 LPC
`},
	{name: "intmeth", want: 501, raw: `!interesting-Method0123456789_*+` + "`" + `.%indeed'~ sip:1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*:&it+has=1,weird!*pas$wo~d_too.(doesn't-it)@example.com SIP/2.0
Via: {{VIA}};branch=z9hG4bK-.!%66*_+` + "`" + `'~
To: "BEL:\` + "\x07" + ` NUL:\` + "\x00" + ` DEL:\` + "\x7f" + `" <sip:1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*@example.com>
From: token1~` + "` " + `token2'+_ token3*%!.- <sip:mundane@example.com>;fromParam''~+*_!.-%="работающий";tag=_token~1'+` + "`" + `*%!-.
Call-ID: intmeth.word%ZK-!.*_+'@word` + "`" + `~)(><:\/"][?}{
CSeq: 139122385 !interesting-Method0123456789_*+` + "`" + `.%indeed'~
Max-Forwards: 255
extensionHeader-!.%*+_` + "`" + `'~:大停電
Content-Length: 0

`},
	{name: "esc01", want: 200, raw: `OPTIONS sip:sips%3Auser%40example.com@example.net SIP/2.0
To: sip:%75se%72@example.com
From: <sip:I%20have%20spaces@example.net>;tag=938
Max-Forwards: 87
i: esc01.239409asdfakjkn23onasd0-3234
CSeq: 234234 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
C: application/sdp
Contact:
  <sip:cal%6Cer@host5.example.net;%6C%72;n%61me=v%61lue%25%34%31>
Content-Length: {{CL}}

v=0
o=mhandley 29739 7272939 IN IP4 192.0.2.1
s=-
c=IN IP4 192.0.2.1
t=0 0
m=audio 49217 RTP/AVP 0 12
m=video 3227 RTP/AVP 31
a=rtpmap:31 LPC
`},
	{name: "escnull", want: 405, raw: `REGISTER sip:example.com SIP/2.0
To: sip:null-%00-null@example.com
From: sip:null-%00-null@example.com;tag=839923423
Max-Forwards: 70
Call-ID: escnull.39203ndfvkjdasfkq3w4otrq0adsfdfnavd
CSeq: 14398234 REGISTER
Via: {{VIA}};branch=z9hG4bKkdjuw
Contact: <sip:%00@host5.example.com>
Contact: <sip:%00%00@host5.example.com>
L:0

`},
	{name: "esc02", want: 501, raw: `RE%47IST%45R sip:registrar.example.com SIP/2.0
To: "%Z%45" <sip:resource@example.com>
From: "%Z%45" <sip:resource@example.com>;tag=f232jadfj23
Call-ID: esc02.asdfnqwo34rq23i34jrjasdcnl23nrlknsdf
Via: {{VIA}};branch=z9hG4bKkdjuw
CSeq: 29344 RE%47IST%45R
Max-Forwards: 70
Contact: <sip:alias1@host1.example.com>
C%6Fntact: <sip:alias2@host2.example.com>
Contact: <sip:alias3@host3.example.com>
l: 0

`},
	{name: "lwsdisp", want: 200, raw: `OPTIONS sip:user@example.com SIP/2.0
To: sip:user@example.com
From: caller<sip:caller@example.com>;tag=323
Max-Forwards: 70
Call-ID: lwsdisp.1234abcd@funky.example.com
CSeq: 60 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "longreq", want: 404, raw: `INVITE sip:user@example.com SIP/2.0
To: "I have a user name of ` + strings.Repeat("extreme", 10) + ` proportion"<sip:user@example.com:6000;unknownparam1=very` + strings.Repeat("long", 20) + `value;longparam` + strings.Repeat("name", 25) + `=shortvalue;very` + strings.Repeat("long", 25) + `ParameterNameWithNoValue>
F: sip:` + strings.Repeat("amazinglylongcallername", 5) + `@example.net;tag=12` + strings.Repeat("982", 50) + `424;unknownheaderparam` + strings.Repeat("name", 20) + `=unknowheaderparam` + strings.Repeat("value", 15) + `;unknownValueless` + strings.Repeat("paramname", 10) + `
Call-ID: longreq.one` + strings.Repeat("really", 20) + `longcallid
CSeq: 3882340 INVITE
Unknown-` + strings.Repeat("Long", 20) + `-Name: unknown-` + strings.Repeat("long", 20) + `-value; unknown-` + strings.Repeat("long", 20) + `-parameter-name = unknown-` + strings.Repeat("long", 20) + `-parameter-value
Via: {{VIA}};branch=z9hG4bK` + strings.Repeat("longbranchvalue", 20) + `
Via: SIP/2.0/TCP sip33.example.com
Via: SIP/2.0/TCP sip32.example.com
Via: SIP/2.0/TCP sip31.example.com
Via: SIP/2.0/TCP sip30.example.com
Via: SIP/2.0/TCP sip29.example.com
Via: SIP/2.0/TCP sip28.example.com
Via: SIP/2.0/TCP sip27.example.com
Via: SIP/2.0/TCP sip26.example.com
Via: SIP/2.0/TCP sip25.example.com
Via: SIP/2.0/TCP sip24.example.com
Via: SIP/2.0/TCP sip23.example.com
Via: SIP/2.0/TCP sip22.example.com
Via: SIP/2.0/TCP sip21.example.com
Via: SIP/2.0/TCP sip20.example.com
Max-Forwards: 70
Contact: <sip:` + strings.Repeat("amazinglylongcallername", 5) + `@host5.example.net>
Content-Type: application/sdp
l: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "dblreq", want: 405, udpOnly: true, raw: `REGISTER sip:example.com SIP/2.0
To: sip:j.user@example.com
From: sip:j.user@example.com;tag=43251j3j324
Max-Forwards: 8
I: dblreq.0ha0isndaksdj99sdfafnl3lk233412
Contact: sip:j.user@host.example.com
CSeq: 8 REGISTER
Via: {{VIA}};branch=z9hG4bKkdjuw23492
Content-Length: 0


INVITE sip:joe@example.com SIP/2.0
t: sip:joe@example.com
From: sip:caller@example.net;tag=141334
Max-Forwards: 8
Call-ID: dblreq.0ha0isnda977644900765@192.0.2.15
CSeq: 8 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw380234
Content-Type: application/sdp
Content-Length: 0

`},
	{name: "semiuri", want: 200, raw: `OPTIONS sip:user;par=u%40example.net@example.com SIP/2.0
To: sip:j_user@example.com
From: sip:caller@example.org;tag=33242
Max-Forwards: 3
Call-ID: semiuri.0ha0isndaksdj
CSeq: 8 OPTIONS
Accept: application/sdp, application/pkcs7-mime,
        multipart/mixed, multipart/signed,
        message/sip, message/sipfrag
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "transports", want: 200, raw: `OPTIONS sip:user@example.com SIP/2.0
To: sip:user@example.com
From: <sip:caller@example.com>;tag=323
Max-Forwards: 70
Call-ID:  transports.kijh4akdnaqjkwendsasfdj
Accept: application/sdp
CSeq: 60 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
Via: SIP/2.0/SCTP t2.example.com;branch=z9hG4bKklasjdhf
Via: SIP/2.0/TLS t3.example.com;branch=z9hG4bK2980unddj
Via: SIP/2.0/UNKNOWN t4.example.com;branch=z9hG4bKasd0f3en
Via: SIP/2.0/TCP t5.example.com;branch=z9hG4bK0a9idfnee
l: 0

`},
	{name: "mpart01", want: 415, raw: `INVITE sip:user@example.com SIP/2.0
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 70
From: Alice <sip:alice@example.com>;tag=9fxced76sl
To: Bob <sip:bob@example.com>
Call-ID: mpart01.3848276298220188511@example.com
CSeq: 1 INVITE
Contact: <sip:alice@alice.example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed;boundary="--------BOUNDARY"
Content-Length: {{CL}}

----------BOUNDARY
Content-Type: application/sdp

v=0
o=- 1 1 IN IP4 192.0.2.1
s=-
c=IN IP4 192.0.2.1
t=0 0
m=audio 49217 RTP/AVP 0
----------BOUNDARY--
`},
	{name: "badbranch", want: 200, raw: `OPTIONS sip:user@example.com SIP/2.0
To: sip:user@example.com
From: sip:caller@example.org;tag=33242
Max-Forwards: 3
Via: {{VIA}};branch=z9hG4bK
Accept: application/sdp
Call-ID: badbranch.sadonfo23i420jv0as0derf3j3n
CSeq: 8 OPTIONS
l: 0

`},
	{name: "inv2543", want: 404, raw: `INVITE sip:UserB@example.com SIP/2.0
Via: {{VIA}}
From: <sip:UserA@example.com>
To: <sip:UserB@example.com>
Call-ID: inv2543.1717@here.example.com
CSeq: 1 INVITE
Contact: <sip:UserA@here.example.com>
Content-Type: application/sdp
Content-Length: {{CL}}

v=0
o=UserA 2890844526 2890844526 IN IP4 here.example.com
s=Session SDP
c=IN IP4 192.0.2.1
t=0 0
m=audio 49172 RTP/AVP 0
a=rtpmap:0 PCMU/8000
`},
	{name: "novelsc", want: 416, raw: `OPTIONS soap.beep://192.0.2.103:3002 SIP/2.0
To: sip:user@example.com
From: sip:caller@example.net;tag=384
Max-Forwards: 3
Call-ID: novelsc.asdfasser0q239nwsdfasdkl34
CSeq: 3923423 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "unksm2", want: 200, raw: `OPTIONS sip:user@example.com SIP/2.0
To: isbn:2983792873
From: <http://www.example.com>;tag=3234233
Call-ID: unksm2.daksdj@hyphenated-host.example.com
CSeq: 234902 OPTIONS
Max-Forwards: 70
Via: {{VIA}};branch=z9hG4bKkdjuw
Contact: <name:John_Smith>
l: 0

`},
	{name: "regaut01", want: 405, raw: `REGISTER sip:example.com SIP/2.0
To: sip:j.user@example.com
From: sip:j.user@example.com;tag=87321hj23128
Max-Forwards: 8
Call-ID: regaut01.0ha0isndaksdj
CSeq: 9338 REGISTER
Via: {{VIA}};branch=z9hG4bKkdjuw
Authorization: NoOneKnowsThisScheme opaque-data=here
Content-Length:0

`},

	// 3.1.2 Invalid messages.
	{name: "badinv01", want: 400, raw: `INVITE sip:user@example.com SIP/2.0
To: sip:j.user@example.com
From: sip:caller@example.net;tag=134161461246
Max-Forwards: 7
Call-ID: badinv01.0ha0isndaksdjasdf3234nas
CSeq: 8 INVITE
Via: {{VIA}};;,;,,
Contact: "Joe" <sip:joe@example.org>;;;;
Content-Length: {{CL}}
Content-Type: ;;;;;;

` + tortureSDP("192.0.2.1")},
	{name: "clerr", want: 400, udpOnly: true, raw: `INVITE sip:user@example.com SIP/2.0
Max-Forwards: 80
To: sip:j.user@example.com
From: sip:caller@example.net;tag=93942939o2
Contact: <sip:caller@hungry.example.net>
Call-ID: clerr.0ha0isndaksdjweiafasdk3
CSeq: 8 INVITE
Via: {{VIA}};branch=z9hG4bK-39234-23523
Content-Type: application/sdp
Content-Length: 9999

` + tortureSDP("192.0.2.155")},
	{name: "scalar02", want: 400, raw: `REGISTER sip:example.com SIP/2.0
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 300
From: sip:user@example.com;tag=932489
To: sip:user@example.com
Call-ID: scalar02.23o0pd9vanlq3wnrlnewofjas9ui32
CSeq: 36893488147419103232 REGISTER
Contact: <sip:user@host129.example.com>
  ;expires=280297596632815
l: 0

`},
	{name: "ncl", want: 400, raw: `INVITE sip:user@example.com SIP/2.0
Max-Forwards: 254
To: sip:j.user@example.com
From: sip:caller@example.net;tag=32394234
Call-ID: ncl.0ha0isndaksdj2193423r542w35
CSeq: 0 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Contact: <sip:caller@example53.example.net>
Content-Type: application/sdp
Content-Length: -999

` + tortureSDP("192.0.2.53")},
	{name: "quotbal", want: 400, raw: `INVITE sip:user@example.com SIP/2.0
To: "Mr. J. User <sip:j.user@example.com>
From: sip:caller@example.net;tag=93334
Max-Forwards: 10
Call-ID: quotbal.aksdj
Contact: <sip:caller@host59.example.net>
CSeq: 8 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Content-Type: application/sdp
Content-Length: {{CL}}

` + tortureSDP("192.0.2.15")},
	{name: "ltgtruri", want: 400, raw: `INVITE <sip:user@example.com> SIP/2.0
To: sip:user@example.com
From: sip:caller@example.net;tag=39291
Max-Forwards: 23
Call-ID: ltgtruri.1@192.0.2.5
CSeq: 1 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Contact: <sip:caller@host5.example.net>
Content-Type: application/sdp
Content-Length: {{CL}}

` + tortureSDP("192.0.2.5")},
	{name: "lwsruri", want: 400, raw: `INVITE sip:user@example.com; lr SIP/2.0
To: sip:user@example.com;tag=3xfe-9921883-z9f
From: sip:caller@example.net;tag=231413434
Max-Forwards: 5
Call-ID: lwsruri.asdfasdoeoi2323-asdfwrn23-asd834rk423
CSeq: 2130706432 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw2395
Contact: <sip:caller@host1.example.net>
Content-Type: application/sdp
Content-Length: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "lwsstart", want: 400, raw: `INVITE  sip:user@example.com  SIP/2.0
Max-Forwards: 8
To: sip:user@example.com
From: sip:caller@example.net;tag=8814
Call-ID: lwsstart.dfknq234oi243099adsdfnawe3@example.com
CSeq: 1893884 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw3923
Contact: <sip:caller@host1.example.net>
Content-Type: application/sdp
Content-Length: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "trws", want: 400, raw: "OPTIONS sip:remote-target@example.com SIP/2.0  \n" + `Via: {{VIA}};branch=z9hG4bKkdjuw
To: <sip:remote-target@example.com>
From: <sip:local-resource@example.com>;tag=329429089
Call-ID: trws.oicu34958239neffasdhr2345r
Accept: application/sdp
CSeq: 238923 OPTIONS
Max-Forwards: 70
Content-Length: 0

`},
	{name: "escruri", want: 400, raw: `INVITE sip:user@example.com?Route=%3Csip:example.com%3E SIP/2.0
To: sip:user@example.com
From: sip:caller@example.net;tag=341518
Max-Forwards: 7
Contact: <sip:caller@host39923.example.net>
Call-ID: escruri.23940-asdfhj-aje3br-234q098w-fawerh2q-h4n5
CSeq: 149209342 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Content-Type: application/sdp
Content-Length: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "badaspec", want: 400, raw: `OPTIONS sip:user@example.org SIP/2.0
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 70
From: "Bell, Alexander" <sip:a.g.bell@example.com>;tag=43
To: "Watson, Thomas" < sip:t.watson@example.org >
Call-ID: badaspec.sdf0234n2nds0a099u23h3hnnw009cdkne3
Accept: application/sdp
CSeq: 3923239 OPTIONS
l: 0

`},
	{name: "baddn", want: 400, raw: `OPTIONS sip:t.watson@example.org SIP/2.0
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 70
From: Bell, Alexander <sip:a.g.bell@example.com>;tag=43
To: Watson, Thomas <sip:t.watson@example.org>
Call-ID: baddn.31415@c.example.com
Accept: application/sdp
CSeq: 3923239 OPTIONS
l: 0

`},
	{name: "badvers", want: 505, raw: `OPTIONS sip:t.watson@example.org SIP/7.0
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 70
From: A. Bell <sip:a.g.bell@example.com>;tag=qweoiqpe
To: T. Watson <sip:t.watson@example.org>
Call-ID: badvers.31417@c.example.com
CSeq: 1 OPTIONS
l: 0

`},
	{name: "mismatch01", want: 400, raw: `OPTIONS sip:user@example.com SIP/2.0
To: sip:j.user@example.com
From: sip:caller@example.net;tag=34525
Max-Forwards: 6
Call-ID: mismatch01.dj0234sxdfl3
CSeq: 8 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "mismatch02", want: 400, raw: `NEWMETHOD sip:user@example.com SIP/2.0
To: sip:j.user@example.com
From: sip:caller@example.net;tag=34525
Max-Forwards: 6
Call-ID: mismatch02.dj0234sxdfl3
CSeq: 8 INVITE
Contact: <sip:caller@host.example.net>
Via: {{VIA}};branch=z9hG4bKkdjuw
Content-Type: application/sdp
l: {{CL}}

` + tortureSDP("192.0.2.1")},

	// 3.4 Application-layer semantics.
	{name: "insuf", want: 400, raw: `INVITE sip:user@example.com SIP/2.0
CSeq: 193942 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Content-Type: application/sdp
l: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "unkscm", want: 416, raw: `OPTIONS nobodyKnowsThisScheme:totallyopaquecontent SIP/2.0
To: sip:user@example.com
From: sip:caller@example.net;tag=384
Max-Forwards: 3
Call-ID: unkscm.nasdfasser0q239nwsdfasdkl34
CSeq: 3923423 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "bext01", want: 420, raw: `OPTIONS sip:user@example.com SIP/2.0
To: sip:j_user@example.com
From: sip:caller@example.net;tag=242etr
Max-Forwards: 6
Call-ID: bext01.0ha0isndaksdj
Require: nothingSupportedHere
CSeq: 8 OPTIONS
Via: {{VIA}};branch=z9hG4bKkdjuw
l: 0

`},
	{name: "invut", want: 415, raw: `INVITE sip:user@example.com SIP/2.0
Contact: <sip:caller@host5.example.net>
To: sip:j.user@example.com
From: sip:caller@example.net;tag=8392034
Max-Forwards: 70
Call-ID: invut.0ha0isndaksdjadsfij34n23d
CSeq: 235448 INVITE
Via: {{VIA}};branch=z9hG4bKkdjuw
Content-Type: application/unknownformat
Content-Length: {{CL}}

<audio>
 <pcmu port="443"/>
</audio>
`},
	{name: "multi01", want: 400, raw: `INVITE sip:user@company.com SIP/2.0
Contact: <sip:caller@host25.example.net>
Via: {{VIA}};branch=z9hG4bKkdjuw
Max-Forwards: 70
CSeq: 5 INVITE
Call-ID: multi01.98asdh@192.0.2.1
CSeq: 59 INVITE
Call-ID: multi01.98asdh@192.0.2.2
From: sip:caller@example.com;tag=3413415
To: sip:user@example.com
To: sip:other@example.net
From: sip:caller@example.net;tag=2923420123
Content-Type: application/sdp
l: {{CL}}

` + tortureSDP("192.0.2.1")},
	{name: "mcl01", want: 400, raw: `OPTIONS sip:user@example.com SIP/2.0
Via: {{VIA}};branch=z9hG4bKkdjuw
To: sip:j_user@example.com
From: sip:caller@example.net;tag=242etr
Max-Forwards: 6
Call-ID: mcl01.fhn2323orihawfdoa3o4r52o3irsdf
CSeq: 15932 OPTIONS
Content-Length: 13
Max-Forwards: 60
Content-Length: 5
Content-Type: text/plain

There's no way to know how many octets are supposed to be here.
`},
}

// torture sends each message to a box that routes no number, over UDP and
// TCP, and checks the final answer.
func TestRFC4475Torture(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.Trunks.Inbound[0].Routes = []config.Route{{Number: "5550000", Agent: "a"}}
	b := newProtocolBox(t, cfg, "", nil)
	for _, transport := range []string{"udp", "tcp"} {
		for _, c := range tortureCases {
			if c.udpOnly && transport == "tcp" {
				continue
			}
			t.Run(transport+"/"+c.name, func(t *testing.T) {
				if c.gap != "" {
					t.Skip("known gap: " + c.gap)
				}
				got := sendTorture(t, b.sip.Addr(), transport, c.raw)
				if got != c.want {
					t.Errorf("%s over %s: answered %d, want %d", c.name, transport, got, c.want)
				}
			})
		}
	}
	if n := b.mgr.Active(); n != 0 {
		t.Fatalf("%d calls opened by torture messages", n)
	}
}

// An RFC 2543 peer sends no From tag: its INVITE is taken like any other
// (the box gives it a tag of its own for sipgo), and every answer carries
// the From the peer sent, without that tag.
func TestRFC2543RequestWithoutFromTag(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.Trunks.Inbound[0].Routes = []config.Route{{Number: "5550000", Agent: "a"}}
	b := newProtocolBox(t, cfg, "", nil)
	var inv string
	for _, c := range tortureCases {
		if c.name == "inv2543" {
			inv = c.raw
		}
	}
	for _, transport := range []string{"udp", "tcp"} {
		head := tortureAnswer(t, b.sip.Addr(), transport, inv)
		if statusCode(head) != 404 {
			t.Fatalf("%s: answered %q, want 404", transport, firstLine(head))
		}
		var from, to string
		for _, l := range strings.Split(head, "\r\n") {
			name, value, _ := strings.Cut(l, ":")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "from", "f":
				from = strings.TrimSpace(value)
			case "to", "t":
				to = strings.TrimSpace(value)
			}
		}
		if from != "<sip:UserA@example.com>" {
			t.Errorf("%s: From %q, want the request's own <sip:UserA@example.com>", transport, from)
		}
		if !strings.HasPrefix(to, "<sip:UserB@example.com>;tag=") || strings.Contains(to, "sb2543") {
			t.Errorf("%s: To %q, want the box's own tag", transport, to)
		}
	}
}

// tortureMessage fills in a case's placeholders and ends its lines in CRLF.
func tortureMessage(raw, via string) []byte {
	msg := strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	msg = strings.ReplaceAll(msg, "{{VIA}}", via)
	if _, body, ok := strings.Cut(msg, "\r\n\r\n"); ok {
		msg = strings.ReplaceAll(msg, "{{CL}}", strconv.Itoa(len(body)))
	}
	return []byte(msg)
}

// sendTorture sends one message and returns the status of the final answer,
// 0 when none came within 3 s.
func sendTorture(t *testing.T, box, transport, raw string) int {
	t.Helper()
	return statusCode(tortureAnswer(t, box, transport, raw))
}

// tortureAnswer sends one message and returns the final answer's start line
// and headers, "" when none came within 3 s.
func tortureAnswer(t *testing.T, box, transport, raw string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if transport == "udp" {
		conn, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		to, err := net.ResolveUDPAddr("udp", box)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteTo(tortureMessage(raw, "SIP/2.0/UDP "+conn.LocalAddr().String()), to); err != nil {
			t.Fatal(err)
		}
		deadline, _ := ctx.Deadline()
		_ = conn.SetReadDeadline(deadline)
		buf := make([]byte, 65535)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return ""
			}
			if msg := string(buf[:n]); statusCode(msg) >= 200 {
				head, _, _ := strings.Cut(msg, "\r\n\r\n")
				return head + "\r\n"
			}
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", box)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(tortureMessage(raw, "SIP/2.0/TCP "+conn.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	r := bufio.NewReader(conn)
	for {
		head, err := readHead(r)
		if err != nil {
			return ""
		}
		if statusCode(head) >= 200 {
			return head
		}
	}
}

// readHead reads one message's start line and headers from a stream and
// skips its body.
func readHead(r *bufio.Reader) (string, error) {
	var head strings.Builder
	length := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line == "\r\n" {
			break
		}
		head.WriteString(line)
		name, value, ok := strings.Cut(line, ":")
		if n := strings.ToLower(strings.TrimSpace(name)); ok && (n == "content-length" || n == "l") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	if _, err := r.Discard(length); err != nil {
		return "", err
	}
	return head.String(), nil
}

// statusCode is the status of a response, 0 for anything else.
func statusCode(msg string) int {
	f := strings.Fields(firstLine(msg))
	if len(f) < 2 || f[0] != "SIP/2.0" {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// A message up to the UDP limit is read whole (sipgo's default buffer cut
// at 32 KB), an unquoted UTF-8 display name is taken, and an ACK is never
// answered, however malformed.
func TestLargeMessagesAndACK(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	large := `OPTIONS sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKlarge1
From: <sip:a@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>
Call-ID: large.1
CSeq: 1 OPTIONS
Max-Forwards: 70
X-Padding: ` + strings.Repeat("p", 60000) + `
Content-Length: 0

`
	badACK := `ACK sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKack1
From: <sip:a@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>;tag=2
Call-ID: ack.1
CSeq: one ACK
Content-Length: 0

`
	// Not RFC 3261's grammar, but what phones send: an unquoted UTF-8 name.
	utf8Name := `OPTIONS sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKutf1
From: José Núñez <sip:jose@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>
Call-ID: utf8.1
CSeq: 1 OPTIONS
Max-Forwards: 70
Content-Length: 0

`
	for _, transport := range []string{"udp", "tcp"} {
		if got := sendTorture(t, b.sip.Addr(), transport, utf8Name); got != 200 {
			t.Errorf("an unquoted UTF-8 display name over %s: answered %d, want 200", transport, got)
		}
		if got := sendTorture(t, b.sip.Addr(), transport, large); got != 200 {
			t.Errorf("a 60 KB OPTIONS over %s: answered %d, want 200", transport, got)
		}
		if got := sendTorture(t, b.sip.Addr(), transport, badACK); got != 0 {
			t.Errorf("a malformed ACK over %s was answered %d", transport, got)
		}
	}
}

// What a peer writes stays out of the box's logs, also where sipgo and
// diago log a request they refuse: an INVITE whose CSeq names another
// method (400), a BYE for no dialog (481), a request that does not parse
// (400).
func TestPeerTextStaysOutOfLogs(t *testing.T) {
	t.Parallel()
	logs := &logWatch{marker: "STACKBONE-PEER-TEXT", inner: pgtest.Logger(t).Handler()}
	b := newProtocolBoxLogged(t, inboundConfig(), "", nil, slog.New(logs))
	for _, c := range []struct {
		raw  string
		want int
	}{
		{want: 400, raw: `INVITE sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKmismatch1
From: "STACKBONE-PEER-TEXT" <sip:STACKBONE-PEER-TEXT@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>
Call-ID: mismatch.STACKBONE-PEER-TEXT
CSeq: 1 OPTIONS
Contact: <sip:x@127.0.0.1>
Max-Forwards: 70
Content-Length: 0

`},
		{want: 481, raw: `BYE sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKbye1
From: "STACKBONE-PEER-TEXT" <sip:a@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>;tag=STACKBONE-PEER-TEXT
Call-ID: bye.STACKBONE-PEER-TEXT
CSeq: 2 BYE
Max-Forwards: 70
Content-Length: 0

`},
		{want: 400, raw: `OPTIONS sip:100@127.0.0.1 SIP/2.0
Via: {{VIA}};branch=z9hG4bKparse1
From: <sip:a@127.0.0.1>;tag=1
To: <sip:100@127.0.0.1>
Call-ID: parse.1
CSeq: 1 OPTIONS
STACKBONE-PEER-TEXT without a colon
Content-Length: 0

`},
	} {
		for _, transport := range []string{"udp", "tcp"} {
			if got := sendTorture(t, b.sip.Addr(), transport, c.raw); got != c.want {
				t.Errorf("%s over %s: answered %d, want %d", firstLine(c.raw), transport, got, c.want)
			}
		}
	}
	if seen := logs.seen(); len(seen) > 0 {
		t.Fatalf("the peer's text reached the logs: %q", seen)
	}
}
