package voice

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The live transcription clients (RealtimeSTT, DeepgramSTT) share one
// stream engine: a WebSocket, a bounded queue of outgoing messages drained
// by a writer goroutine (so Send never waits on the network), a reader
// goroutine that turns the provider's messages into TranscriptEvents, and
// keep-alives while no audio flows. The protocols differ only in what a
// liveProtocol encodes and decodes.

// liveProtocol is one live transcription wire. Its encode methods are
// called under the stream's lock, decode and settle under its read lock;
// a wire whose decoding depends on what it encoded guards that state
// itself.
type liveProtocol interface {
	// audio encodes caller audio at the wire's rate.
	audio(pcm []int16) (websocket.MessageType, []byte)
	// finalize asks for the final transcript of the audio since the last.
	finalize() []byte
	// keepAlive is the message that keeps an idle stream open; nil sends
	// a WebSocket ping instead.
	keepAlive() []byte
	// closing is sent before a normal close (nil for none).
	closing() []byte
	// decode turns one message from the provider into events (interim
	// text, or a final answering a finalize) or the error that ends the
	// stream.
	decode(typ websocket.MessageType, msg []byte) ([]TranscriptEvent, error)
	// settle answers the oldest unanswered finalize without the provider
	// when the wire knows all it heard of that utterance is settled (a
	// provider that sends nothing for a Finalize with no audio left to
	// process); ok is false while it cannot tell.
	settle() (final TranscriptEvent, ok bool)
}

// idleAnswerer is a liveProtocol that can tell, before a finalize is
// sent, that the provider has no turn open (it ended the last one
// itself, and nothing was heard since): idleFinal is then the final of
// the audio since the last one, answered without the provider. Called
// under the stream's read lock.
type idleAnswerer interface {
	idleFinal() (final TranscriptEvent, idle bool)
}

// LiveOptions tune a live transcription client; each zero field takes the
// default in its comment.
type LiveOptions struct {
	// Queue is how many outgoing messages (20 ms frames, finalizes) may
	// wait for the network before the stream fails (default 250, 5 s of
	// audio).
	Queue int
	// KeepAlive is how long the stream may go without sending before a
	// keep-alive (default 5 s; Deepgram closes a stream after 10 s).
	KeepAlive time.Duration
	// WriteTimeout bounds one write to the provider (default 10 s).
	WriteTimeout time.Duration
	// FinalTimeout bounds the wait for a final transcript after a
	// Finalize: past it the stream fails with ErrSTTTimeout (default 15 s).
	FinalTimeout time.Duration
	// SettleAfter is how long after a Finalize with no answer yet the
	// wire may answer it itself when everything the provider sent is
	// settled (Deepgram answers a Finalize only when audio was left to
	// process) (default 300 ms); it is checked again every SettleAfter.
	SettleAfter time.Duration
	// ProviderSilence is how much silence the provider's own end-of-speech
	// detection waits for before it settles the words so far, where the
	// protocol lets the client choose (the Realtime session's server VAD,
	// silence_duration_ms) (default 200 ms). Settled words let an endpoint
	// take its transcript at once; the controller still decides the turn.
	ProviderSilence time.Duration
}

func (o LiveOptions) withDefaults() LiveOptions {
	if o.Queue <= 0 {
		o.Queue = 250
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.FinalTimeout <= 0 {
		o.FinalTimeout = 15 * time.Second
	}
	if o.SettleAfter <= 0 {
		o.SettleAfter = 300 * time.Millisecond
	}
	if o.ProviderSilence <= 0 {
		o.ProviderSilence = 200 * time.Millisecond
	}
	return o
}

// wsURL turns a provider's base URL (http(s)://host/v1) into the WebSocket
// URL of path under it with query.
func wsURL(baseURL, path string, query url.Values) (string, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" {
		return "", openError{fmt.Errorf("%w: the provider's baseURL is not a URL", ErrSTTUnavailable)}
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", openError{fmt.Errorf("%w: the provider's baseURL scheme %q cannot carry a WebSocket", ErrSTTUnavailable, u.Scheme)}
	}
	u.Path += path
	u.RawQuery = query.Encode()
	return u.String(), nil
}

// dialLive opens the WebSocket, classifying a failure by its kind. The
// error never carries the URL's query or the headers (the key).
func dialLive(ctx context.Context, rawURL string, header http.Header, connect time.Duration) (*websocket.Conn, error) {
	if connect <= 0 {
		connect = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, connect)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, rawURL, &websocket.DialOptions{HTTPHeader: header})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		conn.SetReadLimit(1 << 20)
		return conn, nil
	}
	switch {
	case resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		err = fmt.Errorf("%w: the provider answered %d to the WebSocket upgrade", ErrSTTFailed, resp.StatusCode)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		err = fmt.Errorf("%w: connecting to the provider took over %s", ErrSTTTimeout, connect)
	default:
		err = fmt.Errorf("%w: cannot connect to the provider", ErrSTTUnavailable)
	}
	return nil, openError{err}
}

// openError is a stream that could not be opened (its audio can still go
// another way).
type openError struct{ err error }

func (e openError) Error() string { return e.err.Error() }
func (e openError) Unwrap() error { return e.err }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// finalsRoom is how much of the results channel interims leave free.
const finalsRoom = 16

// outMsg is one queued message.
type outMsg struct {
	typ  websocket.MessageType
	data []byte
}

// liveStream is a TranscriptStream over a liveProtocol.
type liveStream struct {
	conn    *websocket.Conn
	proto   liveProtocol
	opts    LiveOptions
	rate    int // the caller's rate
	wire    int // the wire's rate (0: the caller's)
	ctx     context.Context
	cancel  context.CancelFunc
	out     chan outMsg
	results chan TranscriptEvent
	done    chan struct{}
	readEnd chan struct{} // closed when read returns

	mu     sync.Mutex
	err    error  // the failure that ended the stream
	closed bool   // Close was called
	sent   bool   // audio sent since the last finalize
	want   []bool // finalizes awaiting their final, in order; true: nothing was sent, the final is ""
	// overdue holds one timer per finalize sent to the provider and not
	// yet answered, in order: a final later than FinalTimeout fails the
	// stream (a provider that never answers must not hold the turn).
	overdue []*time.Timer
	settler *time.Timer // checks whether the wire can settle the oldest finalize

	readMu sync.Mutex // serializes decode and settle with the finals they deliver

	emitMu     sync.Mutex // orders sends on results
	keepAlives atomic.Int64
}

func newLiveStream(ctx context.Context, conn *websocket.Conn, proto liveProtocol, opts LiveOptions, rate, wire int) *liveStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &liveStream{
		conn: conn, proto: proto, opts: opts, rate: rate, wire: wire, ctx: ctx, cancel: cancel,
		out: make(chan outMsg, opts.Queue), results: make(chan TranscriptEvent, 64), done: make(chan struct{}),
		readEnd: make(chan struct{}),
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer close(s.readEnd); s.read() }()
	go func() { defer wg.Done(); s.write() }()
	go func() {
		// The stream ends when ctx does (Close, a failure, the caller's
		// context): both loops stop, then the results channel closes,
		// after the error if the stream failed.
		<-ctx.Done()
		conn.CloseNow()
		wg.Wait()
		s.mu.Lock()
		for _, t := range s.overdue {
			t.Stop()
		}
		s.overdue = nil
		if s.settler != nil {
			s.settler.Stop()
		}
		err, closed := s.err, s.closed
		if err == nil && !closed {
			err = fmt.Errorf("%w: the call's context ended", ErrSTTUnavailable)
			s.err = err
		}
		s.mu.Unlock()
		s.emitMu.Lock()
		if err != nil && !closed {
			select {
			case s.results <- TranscriptEvent{Err: err}:
			default: // a consumer that left the results unread gets the error from Send
			}
		}
		close(s.results)
		s.emitMu.Unlock()
		close(s.done)
	}()
	return s
}

// fail ends the stream with err unless it already ended.
func (s *liveStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.closed {
		s.err = err
	}
	s.mu.Unlock()
	s.cancel()
}

// Send implements TranscriptStream. The audio is resampled to the wire's
// rate and queued; a full queue fails the stream with ErrSTTOverflow.
func (s *liveStream) Send(pcm []int16) error {
	if len(pcm) == 0 {
		return s.state()
	}
	if s.wire != 0 && s.wire != s.rate {
		pcm = Resample(pcm, s.rate, s.wire)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stateLocked(); err != nil {
		return err
	}
	typ, data := s.proto.audio(pcm)
	select {
	case s.out <- outMsg{typ, data}:
		s.sent = true
		return nil
	default:
		s.err = fmt.Errorf("%w: %d messages wait for the provider", ErrSTTOverflow, cap(s.out))
		s.cancel()
		return s.err
	}
}

// Finalize implements TranscriptStream. With no audio since the last
// final, the final is "" without asking the provider (which would refuse
// an empty commit).
func (s *liveStream) Finalize() error {
	s.mu.Lock()
	if err := s.stateLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	if a, ok := s.proto.(idleAnswerer); ok && s.sent && len(s.want) == 0 {
		// A turn-taking wire whose provider has no turn open answers at
		// once: a Finalize would end the caller's next turn instead.
		s.mu.Unlock()
		s.readMu.Lock()
		ev, idle := a.idleFinal()
		if idle {
			s.mu.Lock()
			s.sent = false
			s.mu.Unlock()
			s.emit(ev)
		}
		s.readMu.Unlock()
		if idle {
			return nil
		}
		s.mu.Lock()
		if err := s.stateLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if !s.sent {
		if len(s.want) > 0 {
			s.want = append(s.want, true)
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		s.emit(TranscriptEvent{Final: true})
		return nil
	}
	select {
	case s.out <- outMsg{websocket.MessageText, s.proto.finalize()}:
		s.sent = false
		s.want = append(s.want, false)
		s.overdue = append(s.overdue, time.AfterFunc(s.opts.FinalTimeout, func() {
			s.fail(fmt.Errorf("%w: no final transcript %s after the end of the utterance", ErrSTTTimeout, s.opts.FinalTimeout))
		}))
		if s.settler == nil {
			s.settler = time.AfterFunc(s.opts.SettleAfter, s.settle)
		}
		s.mu.Unlock()
		return nil
	default:
		s.err = fmt.Errorf("%w: %d messages wait for the provider", ErrSTTOverflow, cap(s.out))
		s.mu.Unlock()
		s.cancel()
		return s.err
	}
}

// Results implements TranscriptStream.
func (s *liveStream) Results() <-chan TranscriptEvent { return s.results }

// Close implements TranscriptStream: it says goodbye to the provider when
// the stream is healthy, closes the connection and returns once every
// goroutine of the stream ended.
func (s *liveStream) Close() error {
	s.mu.Lock()
	healthy := s.err == nil && !s.closed
	s.closed = true
	s.mu.Unlock()
	if healthy {
		if bye := s.proto.closing(); bye != nil {
			ctx, cancel := context.WithTimeout(s.ctx, time.Second)
			_ = s.conn.Write(ctx, websocket.MessageText, bye)
			cancel()
		}
		_ = s.conn.Close(websocket.StatusNormalClosure, "")
	}
	s.cancel()
	<-s.done
	return nil
}

func (s *liveStream) state() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

func (s *liveStream) stateLocked() error {
	switch {
	case s.err != nil:
		return s.err
	case s.closed:
		return fmt.Errorf("%w: the stream is closed", ErrSTTUnavailable)
	}
	return nil
}

// emit delivers an event in order. Interim events are dropped when the
// consumer is behind (the next one carries the whole text), leaving room
// for finals, so a Finalize that answers "" at once does not wait on a
// consumer that is itself the caller; finals, settled words and turn
// signals wait for room until the stream ends.
func (s *liveStream) emit(ev TranscriptEvent) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	if !ev.Final && !ev.Settled && ev.Turn == "" {
		if len(s.results) < cap(s.results)-finalsRoom {
			s.results <- ev
		}
		return
	}
	select {
	case s.results <- ev:
	case <-s.ctx.Done():
	}
}

// write drains the queue to the provider and keeps an idle stream open.
func (s *liveStream) write() {
	idle := time.NewTimer(s.opts.KeepAlive)
	defer idle.Stop()
	for {
		var m outMsg
		select {
		case <-s.ctx.Done():
			return
		case m = <-s.out:
		case <-idle.C:
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
			var err error
			if ka := s.proto.keepAlive(); ka != nil {
				err = s.conn.Write(ctx, websocket.MessageText, ka)
			} else {
				err = s.conn.Ping(ctx)
			}
			cancel()
			if err != nil {
				s.failWrite(err, "keep-alive")
				return
			}
			s.keepAlives.Add(1)
			idle.Reset(s.opts.KeepAlive)
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
		err := s.conn.Write(ctx, m.typ, m.data)
		cancel()
		if err != nil {
			s.failWrite(err, "send")
			return
		}
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(s.opts.KeepAlive)
	}
}

// readGrace is how long a failed write waits for the reader's account of
// the failure.
const readGrace = time.Second

// failWrite fails the stream on a write that failed (op), after the
// reader had its moment: a provider that says why before it closes the
// connection (an error message, a close code) is read, and its reason is
// the stream's, not the dropped connection the writer met first.
func (s *liveStream) failWrite(err error, op string) {
	wrapped := s.wireError(err, op)
	t := time.NewTimer(readGrace)
	defer t.Stop()
	select {
	case <-s.readEnd:
	case <-t.C:
	}
	s.fail(wrapped)
}

// read turns the provider's messages into events until the stream ends.
func (s *liveStream) read() {
	for {
		typ, msg, err := s.conn.Read(s.ctx)
		if err != nil {
			s.fail(s.wireError(err, "receive"))
			return
		}
		s.readMu.Lock()
		evs, err := s.proto.decode(typ, msg)
		if err != nil {
			s.readMu.Unlock()
			s.fail(err)
			return
		}
		s.deliver(evs)
		s.readMu.Unlock()
	}
}

// settle lets the wire answer the oldest finalize itself, and checks
// again later while finalizes wait.
func (s *liveStream) settle() {
	s.readMu.Lock()
	s.mu.Lock()
	waiting := len(s.overdue) > 0 && s.ctx.Err() == nil
	s.mu.Unlock()
	if waiting {
		if ev, ok := s.proto.settle(); ok {
			s.deliver([]TranscriptEvent{ev})
		}
	}
	s.readMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.overdue) > 0 && s.ctx.Err() == nil {
		s.settler.Reset(s.opts.SettleAfter)
	} else {
		s.settler = nil
	}
}

// deliver emits decoded events (under readMu): each final answers the
// oldest finalize, followed by the "" finals of finalizes that had no
// audio after it.
func (s *liveStream) deliver(evs []TranscriptEvent) {
	for _, ev := range evs {
		if !ev.Final {
			s.emit(ev)
			continue
		}
		s.mu.Lock()
		if len(s.want) == 0 {
			// A final nobody asked for (the provider's own
			// endpointing): the controller's finalize decides turns.
			s.mu.Unlock()
			continue
		}
		empties := 0
		s.want = s.want[1:]
		s.overdue[0].Stop()
		s.overdue = s.overdue[1:]
		for len(s.want) > 0 && s.want[0] {
			s.want = s.want[1:]
			empties++
		}
		s.mu.Unlock()
		s.emit(ev)
		for range empties {
			s.emit(TranscriptEvent{Final: true})
		}
	}
}

// wireError classifies a failed read or write.
func (s *liveStream) wireError(err error, op string) error {
	if s.ctx.Err() != nil {
		return fmt.Errorf("%w: the stream ended", ErrSTTUnavailable)
	}
	if code := websocket.CloseStatus(err); code != -1 {
		if code == websocket.StatusNormalClosure {
			return fmt.Errorf("%w: the provider closed the stream", ErrSTTUnavailable)
		}
		return fmt.Errorf("%w: the provider closed the stream (%d)", ErrSTTFailed, code)
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		return fmt.Errorf("%w: %s", ErrSTTTimeout, op)
	}
	return fmt.Errorf("%w: %s: the connection dropped", ErrSTTUnavailable, op)
}

// transcribeLive is Transcribe over a live stream: open, send the
// utterance in 250 ms pieces (so a minute of speech fits the send queue
// whatever the network), finalize, wait for the final.
func transcribeLive(ctx context.Context, st StreamingTranscriber, pcm []int16, rate int, wait time.Duration) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ts, err := st.Listen(ctx, rate)
	if err != nil {
		return "", err
	}
	defer ts.Close()
	frame := max(rate/4, 1)
	for i := 0; i < len(pcm); i += frame {
		if err := ts.Send(pcm[i:min(i+frame, len(pcm))]); err != nil {
			return "", err
		}
	}
	if err := ts.Finalize(); err != nil {
		return "", err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ts.Results():
			switch {
			case !ok:
				return "", fmt.Errorf("%w: the stream ended before the final transcript", ErrSTTUnavailable)
			case ev.Err != nil:
				return "", ev.Err
			case ev.Final:
				return strings.TrimSpace(ev.Text), nil
			}
		case <-timer.C:
			return "", fmt.Errorf("%w: no final transcript %s after the end of the utterance", ErrSTTTimeout, wait)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}
