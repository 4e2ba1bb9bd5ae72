package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/rtpmux"
	"github.com/stackbone/box/telemetry"
	"github.com/stackbone/box/voice"
)

// Config wires a Server.
type Config struct {
	// Config is the sip section of the box's configuration (validated by
	// config.Parse). Zero fields take the defaults of config.SIP.
	Config config.SIP
	// Manager opens and carries the calls. Required.
	Manager *voice.Manager
	// Logger receives ids, codes and timings, never what was said.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// Metrics records the agent audio's pacing per packet (nil: none).
	Metrics *telemetry.Metrics
}

// Server carries SIP calls: it answers INVITEs on the inbound trunks and
// places calls through the outbound trunks (Dial). Create it with New, then
// Start; Close ends every call and stops listening.
type Server struct {
	metrics  *telemetry.Metrics
	cfg      config.SIP
	calls    *voice.Manager
	log      *slog.Logger
	inbound  []*inboundTrunk
	outbound []config.OutboundTrunk
	digest   *diago.DigestAuthServer
	codecs   []media.Codec

	// minSE is RFC 4028's Min-SE (90 s), lowered only by tests.
	minSE time.Duration

	carried, rtpIn, dropped atomic.Int64
	pacing                  voice.Pacing
	setup                   [SetupBuckets]atomic.Int64

	mu      sync.Mutex
	active  map[string]*call // by SIP Call-ID
	ctx     context.Context
	cancel  context.CancelFunc
	ua      *sipgo.UserAgent
	srv     *sipgo.Server
	dg      *diago.Diago
	udp     net.PacketConn
	tcp     net.Listener
	mux     *rtpmux.Mux // the shared RTP port; nil: a port per call
	addr    string
	serving sync.WaitGroup // listeners
	running sync.WaitGroup // calls
	closed  bool
}

// New returns a Server with the defaults applied. It does not listen yet.
func New(cfg Config) (*Server, error) {
	if cfg.Manager == nil {
		return nil, errors.New("sip: Config.Manager is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	PrepareLibrary()
	c := cfg.Config
	if c.Addr == "" {
		c.Addr = config.DefaultSIPAddr
	}
	if c.MaxCalls == 0 {
		c.MaxCalls = config.DefaultSIPMaxCalls
	}
	if c.MaxCallDuration == 0 {
		c.MaxCallDuration = config.DefaultSIPMaxCallDuration
	}
	if c.MediaTimeout == 0 {
		c.MediaTimeout = config.DefaultSIPMediaTimeout
	}
	if c.SessionTimer == 0 {
		c.SessionTimer = config.DefaultSIPSessionTimer
	}
	s := &Server{
		metrics: cfg.Metrics,
		cfg:     c, calls: cfg.Manager, log: cfg.Logger.With("component", "sip"),
		outbound: c.Trunks.Outbound, digest: diago.NewDigestServer(),
		codecs: []media.Codec{media.CodecAudioUlaw, media.CodecAudioAlaw, media.CodecTelephoneEvent8000},
		minSE:  config.MinSIPSessionTimer, active: map[string]*call{},
	}
	if c.SessionTimer > 0 && c.SessionTimer < s.minSE {
		s.minSE = c.SessionTimer
	}
	for _, t := range c.Trunks.Inbound {
		it, err := newInboundTrunk(t)
		if err != nil {
			return nil, err
		}
		s.inbound = append(s.inbound, it)
	}
	return s, nil
}

// Start listens on the configured address (UDP and TCP on the same port)
// and serves until ctx ends or Close. Calls run under ctx: when it ends,
// each call closes with outcome shutdown.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		return errors.New("sip: already started")
	}
	host, portStr, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("sip: addr %q: %w", s.cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("sip: addr %q: bad port", s.cfg.Addr)
	}
	udp, tcp, err := listenPair(host, port)
	if err != nil {
		return fmt.Errorf("sip: listen %s: %w", s.cfg.Addr, err)
	}
	port = udp.LocalAddr().(*net.UDPAddr).Port
	if s.cfg.RTPPortMin > 0 {
		// diago keeps the RTP range process-wide: one Server per process
		// sets it.
		media.RTPPortStart, media.RTPPortEnd = s.cfg.RTPPortMin, s.cfg.RTPPortMax
	}

	var mux *rtpmux.Mux
	if s.cfg.RTPPort >= 0 {
		ip := net.IPv4zero
		if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
			ip = net.IP(a.AsSlice())
		}
		if mux, err = s.listenShared(ip); err != nil {
			udp.Close()
			tcp.Close()
			return fmt.Errorf("sip: shared RTP port: %w", err)
		}
	}
	closeMux := func() {
		if mux != nil {
			mux.Close()
		}
	}

	lib := slog.New(libraryLog{s.log.Handler()})
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("stackbone"),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(lib)),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(lib)))
	if err != nil {
		udp.Close()
		tcp.Close()
		closeMux()
		return fmt.Errorf("sip: %w", err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(lib))
	if err != nil {
		udp.Close()
		tcp.Close()
		closeMux()
		ua.Close()
		return fmt.Errorf("sip: %w", err)
	}
	ext := s.cfg.ExternalHost
	transports := []diago.DiagoOption{}
	for _, network := range []string{"udp", "tcp"} {
		transports = append(transports, diago.WithTransport(diago.Transport{
			Transport: network, BindHost: host, BindPort: port, ExternalHost: ext,
		}))
	}
	opts := append(transports,
		diago.WithServer(srv), diago.WithLogger(lib),
		diago.WithMediaConfig(diago.MediaConfig{Codecs: s.codecs}),
		diago.WithServerRequestMiddleware(s.middleware))
	dg := diago.NewDiago(ua, opts...)
	dg.HandleFunc(s.serveInbound)
	srv.OnUpdate(s.onUpdate)
	// After diago, whose OPTIONS lists every registered handler: the box
	// answers what it serves, as on its INVITE answers. REGISTER and the
	// other methods the box does not serve reach noRoute (405 or 501).
	srv.OnOptions(s.middleware(s.onOptions))
	srv.OnNoRoute(s.middleware(s.noRoute))

	s.ctx, s.cancel = context.WithCancel(ctx)
	s.ua, s.srv, s.dg, s.mux = ua, srv, dg, mux
	s.tcp = &strictListener{Listener: tcp, log: s.log}
	s.udp = &strictConn{PacketConn: udp, log: s.log}
	s.addr = net.JoinHostPort(host, strconv.Itoa(port))
	s.serving.Add(2)
	go func() {
		defer s.serving.Done()
		if err := srv.ServeUDP(s.udp); err != nil && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil {
			s.log.Error("sip: udp listener stopped", "error", err)
		}
	}()
	go func() {
		defer s.serving.Done()
		if err := srv.ServeTCP(s.tcp); err != nil && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil {
			s.log.Error("sip: tcp listener stopped", "error", err)
		}
	}()
	// The client side sends from the listener's socket, which sipgo knows
	// only once ServeUDP registered it; wait for that so Dial works at once.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if c, err := srv.TransportLayer().GetConnection("udp", s.addr); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			s.log.Warn("sip: the UDP listener is slow to register")
			break
		}
	}
	go func() {
		<-s.ctx.Done()
		s.Close()
	}()
	s.log.Info("sip: listening", "addr", s.addr, "transports", "udp,tcp",
		"inboundTrunks", len(s.inbound), "outboundTrunks", len(s.outbound))
	return nil
}

// Addr is the address the server listens on (host:port, UDP and TCP), known
// after Start; useful when the configured port was 0.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Active is the number of calls the server carries (ringing or answered).
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active)
}

// Stats are totals over the calls that ended.
type Stats struct {
	// Calls answered and carried to their end.
	Calls int64
	// RTPPackets received from the callers.
	RTPPackets int64
	// FramesDropped are caller frames the controller did not read in time
	// (the box's own loss; 0 on a healthy box).
	FramesDropped int64

	// Pacing counts the agent's RTP packets by how far the interval since
	// the call's previous packet strayed from 20 ms.
	Pacing voice.PacingCounts
	// Setup counts the inbound calls answered by the time from the INVITE
	// to the 200 OK (open, recall, answer): bucket i holds [i, i+1) *
	// SetupBucket, the last one everything beyond.
	Setup [SetupBuckets]int64
	// Shared counts the packets and system calls of the shared RTP port
	// (zero when every call has a port of its own).
	Shared rtpmux.Stats
}

// The setup histogram: 1 ms buckets up to 2 s (pacing: voice.Pacing).
const (
	SetupBucket  = time.Millisecond
	SetupBuckets = 2001
)

// PacingJitter is the p-th percentile (0-100) of the pacing histogram, to
// the bucket's upper edge; 0 without samples.
func (st Stats) PacingJitter(p float64) time.Duration { return st.Pacing.Jitter(p) }

// SetupTime is the p-th percentile (0-100) of the setup histogram, to the
// bucket's upper edge; 0 without samples.
func (st Stats) SetupTime(p float64) time.Duration {
	return voice.Percentile(st.Setup[:], SetupBucket, p)
}

// Sub is the difference of two snapshots, for a window of time.
func (st Stats) Sub(earlier Stats) Stats {
	d := Stats{Calls: st.Calls - earlier.Calls, RTPPackets: st.RTPPackets - earlier.RTPPackets,
		FramesDropped: st.FramesDropped - earlier.FramesDropped}
	d.Pacing = st.Pacing.Sub(earlier.Pacing)
	for i := range st.Setup {
		d.Setup[i] = st.Setup[i] - earlier.Setup[i]
	}
	d.Shared = st.Shared.Sub(earlier.Shared)
	return d
}

// listenShared opens the shared RTP port: sip.rtpPort, else the first
// free pair of the RTP range, else any free pair.
func (s *Server) listenShared(ip net.IP) (*rtpmux.Mux, error) {
	n := runtime.GOMAXPROCS(0)
	if s.cfg.RTPPort > 0 || s.cfg.RTPPortMin == 0 {
		return rtpmux.Listen(ip, s.cfg.RTPPort, n, s.log)
	}
	var err error
	for p := s.cfg.RTPPortMin; p+1 <= s.cfg.RTPPortMax; p += 2 {
		var m *rtpmux.Mux
		if m, err = rtpmux.Listen(ip, p, n, s.log); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no free pair in the RTP range %d-%d: %w", s.cfg.RTPPortMin, s.cfg.RTPPortMax, err)
}

// Stats returns the totals so far (packets and drops of calls that ended,
// pacing of every packet sent, setup of every inbound call answered): the
// figures a metrics endpoint exports.
func (s *Server) Stats() Stats {
	st := Stats{Calls: s.carried.Load(), RTPPackets: s.rtpIn.Load(), FramesDropped: s.dropped.Load(), Pacing: s.pacing.Counts()}
	for i := range s.setup {
		st.Setup[i] = s.setup[i].Load()
	}
	s.mu.Lock()
	mux := s.mux
	s.mu.Unlock()
	if mux != nil {
		st.Shared = mux.Stats()
	}
	return st
}

func (s *Server) recordPacing(d time.Duration) {
	s.pacing.Record(d)
	s.metrics.Pacing(d.Abs())
}

func (s *Server) recordSetup(d time.Duration) {
	s.setup[min(int(max(d, 0)/SetupBucket), SetupBuckets-1)].Add(1)
}

// Close ends every call (outcome shutdown, BYE), waits up to 10 s for
// their completions and stops listening. It is safe to call twice.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed || s.ctx == nil {
		s.closed = true
		s.mu.Unlock()
		return
	}
	s.closed = true
	calls := make([]*call, 0, len(s.active))
	for _, c := range s.active {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	for _, c := range calls {
		c.report(voice.OutcomeShutdown, "")
		c.stop()
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.log.Warn("sip: calls still completing at shutdown")
	}
	s.udp.Close()
	s.tcp.Close()
	if s.mux != nil {
		s.mux.Close()
	}
	s.serving.Wait()
	s.srv.Close()
	s.ua.Close()
	s.digest.Close()
	s.log.Info("sip: stopped")
}

// admit registers a call under its SIP Call-ID unless the server is full or
// closing.
func (s *Server) admit(c *call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.active) >= s.cfg.MaxCalls {
		return false
	}
	if _, dup := s.active[c.sipCallID]; dup {
		return false
	}
	s.active[c.sipCallID] = c
	s.running.Add(1)
	return true
}

func (s *Server) release(c *call) {
	s.mu.Lock()
	if s.active[c.sipCallID] == c {
		delete(s.active, c.sipCallID)
		s.running.Done()
	}
	s.mu.Unlock()
}

func (s *Server) lookup(req *sip.Request) *call {
	id := req.CallID()
	if id == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[id.Value()]
}

// listenPair binds UDP and TCP on the same port; port 0 takes a free one.
func listenPair(host string, port int) (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 20 {
		udp, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, nil, err
		}
		p := udp.LocalAddr().(*net.UDPAddr).Port
		tcp, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return udp, tcp, nil
		}
		udp.Close()
		lastErr = err
		if port != 0 {
			break
		}
	}
	return nil, nil, lastErr
}
