// Package srtpconn is the DTLS-SRTP part of a WebRTC peer built on pion's
// ICE, DTLS and SRTP packages without a PeerConnection (the embedded
// browser peer, and the load runs' Go caller): the DTLS side of an ICE
// connection whose reader passes it the DTLS records, the handshake with
// the fingerprint the SDP named, and the SRTP contexts it keys.
//
//	pipe := srtpconn.NewPipe(conn)           // the reader calls pipe.Deliver(b) for DTLS records
//	d, err := srtpconn.Handshake(ctx, pipe, cert, remoteFP, client)
//	enc, dec, err := srtpconn.Contexts(d, client)
package srtpconn

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pion/dtls/v3"
	dtlsnet "github.com/pion/dtls/v3/pkg/net"
	"github.com/pion/ice/v4"
	"github.com/pion/srtp/v3"
)

// Fingerprint is a DER certificate's SHA-256 fingerprint as SDP writes it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	hexs := make([]string, len(sum))
	for i, b := range sum {
		hexs[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(hexs, ":")
}

// IsDTLS reports whether a packet read from the ICE connection is a DTLS
// record (RFC 7983's first byte 20-63).
func IsDTLS(b []byte) bool { return len(b) > 0 && b[0] >= 20 && b[0] <= 63 }

// IsRTCP reports whether an RTP-range packet is RTCP (RFC 5761: packet
// types 192-223 where RTP has its marker and payload type).
func IsRTCP(b []byte) bool { return len(b) > 1 && b[1] >= 192 && b[1] <= 223 }

// IsRTP reports whether a packet is RTP or RTCP (first byte 128-191).
func IsRTP(b []byte) bool { return len(b) >= 12 && b[0] >= 128 && b[0] <= 191 }

// Pipe is the DTLS side of an ICE connection: Read gives the records the
// connection's reader delivered, Write goes straight to the connection.
type Pipe struct {
	conn   *ice.Conn
	in     chan []byte
	closed chan struct{}
	once   sync.Once
}

// NewPipe is the DTLS side of conn.
func NewPipe(conn *ice.Conn) *Pipe {
	return &Pipe{conn: conn, in: make(chan []byte, 16), closed: make(chan struct{})}
}

// Deliver passes a copy of one DTLS record to the handshake; a record that
// finds the queue full is dropped, as the network may drop it (DTLS
// retransmits).
func (p *Pipe) Deliver(b []byte) {
	select {
	case p.in <- append([]byte(nil), b...):
	default:
	}
}

func (p *Pipe) Read(b []byte) (int, error) {
	select {
	case r := <-p.in:
		return copy(b, r), nil
	case <-p.closed:
		return 0, io.EOF
	}
}

func (p *Pipe) Write(b []byte) (int, error) { return p.conn.Write(b) }

// Close ends Read (the reader calls it when the connection closes).
func (p *Pipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *Pipe) LocalAddr() net.Addr              { return p.conn.LocalAddr() }
func (p *Pipe) RemoteAddr() net.Addr             { return p.conn.RemoteAddr() }
func (p *Pipe) SetDeadline(time.Time) error      { return nil }
func (p *Pipe) SetReadDeadline(time.Time) error  { return nil }
func (p *Pipe) SetWriteDeadline(time.Time) error { return nil }

// ErrFingerprint is a peer certificate that does not match the SDP.
var ErrFingerprint = errors.New("srtpconn: the peer's DTLS certificate does not match the fingerprint its SDP gave")

// Handshake runs DTLS over pipe as the client or the server, with cert,
// accepting only the certificate whose fingerprint is remoteFP, and
// offering the SRTP profiles browsers use.
func Handshake(ctx context.Context, pipe *Pipe, cert tls.Certificate, remoteFP string, client bool) (*dtls.Conn, error) {
	cfg := &dtls.Config{
		Certificates:           []tls.Certificate{cert},
		SRTPProtectionProfiles: []dtls.SRTPProtectionProfile{dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80},
		ExtendedMasterSecret:   dtls.RequireExtendedMasterSecret,
		ClientAuth:             dtls.RequireAnyClientCert,
		InsecureSkipVerify:     true, // the SDP's fingerprint is the check
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || Fingerprint(raw[0]) != remoteFP {
				return ErrFingerprint
			}
			return nil
		},
	}
	pc := dtlsnet.PacketConnFromConn(pipe)
	var d *dtls.Conn
	var err error
	if client {
		d, err = dtls.Client(pc, pipe.RemoteAddr(), cfg)
	} else {
		d, err = dtls.Server(pc, pipe.RemoteAddr(), cfg)
	}
	if err != nil {
		return nil, err
	}
	if err := d.HandshakeContext(ctx); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("srtpconn: DTLS handshake: %w", err)
	}
	return d, nil
}

// Contexts keys SRTP from a completed handshake: enc for what this side
// sends, dec (with replay protection) for what it receives.
func Contexts(d *dtls.Conn, client bool) (enc, dec *srtp.Context, err error) {
	sel, ok := d.SelectedSRTPProtectionProfile()
	if !ok {
		return nil, nil, errors.New("srtpconn: no SRTP profile negotiated")
	}
	cfg := &srtp.Config{}
	switch sel {
	case dtls.SRTP_AEAD_AES_128_GCM:
		cfg.Profile = srtp.ProtectionProfileAeadAes128Gcm
	case dtls.SRTP_AES128_CM_HMAC_SHA1_80:
		cfg.Profile = srtp.ProtectionProfileAes128CmHmacSha1_80
	default:
		return nil, nil, fmt.Errorf("srtpconn: SRTP profile %v", sel)
	}
	state, ok := d.ConnectionState()
	if !ok {
		return nil, nil, errors.New("srtpconn: DTLS state unavailable")
	}
	if err := cfg.ExtractSessionKeysFromDTLS(&state, client); err != nil {
		return nil, nil, err
	}
	if enc, err = srtp.CreateContext(cfg.Keys.LocalMasterKey, cfg.Keys.LocalMasterSalt, cfg.Profile); err != nil {
		return nil, nil, err
	}
	dec, err = srtp.CreateContext(cfg.Keys.RemoteMasterKey, cfg.Keys.RemoteMasterSalt, cfg.Profile,
		srtp.SRTPReplayProtection(64), srtp.SRTCPReplayProtection(64))
	return enc, dec, err
}
