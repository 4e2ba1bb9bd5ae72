package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/internal/rtpmux"
	"github.com/stackbone/box/voice"
)

// Config wires the rooms service.
type Config struct {
	// Manager opens and runs the calls (the same controller as SIP).
	// Required.
	Manager *voice.Manager
	// Rooms is the rooms section of the configuration: LiveKit when
	// Rooms.LiveKit.URL is set, else the embedded peer. Zero fields take the
	// defaults of package config (DefaultRooms...).
	Rooms config.Rooms
	// Logger receives ids, codes and timings, never what was said.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// DevKey pre-fills the call page's key field; set only under
	// `stackbone dev`, whose key's secret is public.
	DevKey string
}

// Backends.
const (
	BackendEmbedded = "embedded"
	BackendLiveKit  = "livekit"
)

// Room states as the API shows them.
const (
	StatusWaiting = "waiting" // the agent is in the room; the browser has not joined
	StatusActive  = "active"  // the call is running
	StatusEnded   = "ended"   // completed (saved or not)
)

// backend carries the media of rooms: LiveKit or the embedded peer.
type backend interface {
	// name is BackendEmbedded or BackendLiveKit.
	name() string
	// rate is the sample rate of the calls it carries.
	rate() int
	// open readies the media side of r and sets r.media, r.answer (for
	// signalling over HTTP) and r.teardown. It hands the caller's audio to
	// r.call, calls r.connected once the browser's audio path is up and
	// r.left when the browser left.
	// It returns what the browser needs to join.
	open(ctx context.Context, r *room) (Join, error)
	// close releases what the backend shares between rooms.
	close() error
}

// Service serves browser rooms. It is safe for concurrent use.
type Service struct {
	cfg     Config
	log     *slog.Logger
	backend backend

	ctx    context.Context // ends running calls at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	rooms  map[string]*room
	closed bool
}

// New returns the service with the backend the configuration names.
// LiveKit needs a build with Opus (-tags libopus); without it New fails
// with opus.ErrUnavailable rather than serving rooms nobody can hear.
func New(cfg Config) (*Service, error) {
	if cfg.Manager == nil {
		return nil, errors.New("rooms: Config.Manager is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &cfg.Rooms
	if r.MaxRooms == 0 {
		r.MaxRooms = config.DefaultRoomsMaxRooms
	}
	if r.JoinTimeout == 0 {
		r.JoinTimeout = config.DefaultRoomsJoinTimeout
	}
	if r.MediaTimeout == 0 {
		r.MediaTimeout = config.DefaultRoomsMediaTimeout
	}
	if r.MaxCallDuration == 0 {
		r.MaxCallDuration = config.DefaultRoomsMaxCallDuration
	}
	s := &Service{cfg: cfg, log: cfg.Logger.With("component", "rooms"), rooms: map[string]*room{}}
	var err error
	if r.LiveKit.Configured() {
		s.backend, err = newLiveKit(r.LiveKit, s.log)
	} else {
		s.backend, err = newEmbedded(r.Embedded, s.log)
	}
	if err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.log.Info("browser rooms ready", "backend", s.backend.name())
	return s, nil
}

// Backend names the backend in use.
func (s *Service) Backend() string { return s.backend.name() }

// Pacing is the histogram of the agent packets' pacing error on the
// embedded peer (how far each interval strayed from 20 ms, measured where
// the packet is handed to the network, as the SIP server measures it);
// empty on LiveKit, whose server paces the audio it forwards.
func (s *Service) Pacing() voice.PacingCounts {
	if e, ok := s.backend.(*embedded); ok {
		return e.pacing.Counts()
	}
	return voice.PacingCounts{}
}

// SharedReads counts the packets the embedded peer read on its one UDP
// port and the system calls that read them; zero with a port per room.
func (s *Service) SharedReads() (packets, reads int64) {
	if e, ok := s.backend.(*embedded); ok && e.muxNet != nil {
		return e.muxNet.ReadStats()
	}
	return 0, 0
}

// SharedSends counts the agent packets the embedded peer sent in batches
// on its one UDP port (rooms.embedded.udpPort) and the system calls that
// sent them; zero with a port per room.
func (s *Service) SharedSends() rtpmux.SenderStats {
	if e, ok := s.backend.(*embedded); ok && e.muxNet != nil {
		return e.muxNet.SenderStats()
	}
	return rtpmux.SenderStats{}
}

// Register mounts the rooms routes and the call page on srv.
func (s *Service) Register(srv *api.Server) {
	srv.PersonRoute("POST /api/voice/rooms", auth.ScopeVoice, s.create)
	srv.Route("GET /api/voice/rooms", auth.ScopeVoice, s.list)
	srv.PersonRoute("GET /api/voice/rooms/{id}", auth.ScopeVoice, s.get)
	srv.PersonRoute("DELETE /api/voice/rooms/{id}", auth.ScopeVoice, s.end)
	srv.PersonRoute("POST /api/voice/rooms/{id}/offer", auth.ScopeVoice, s.offer)
	browserURL := s.cfg.Rooms.LiveKit.PublicURL // what browsers join
	if browserURL == "" {
		browserURL = s.cfg.Rooms.LiveKit.URL
	}
	page := pageHandler(s.cfg.DevKey, browserURL)
	srv.Handle("GET /call", page)
	srv.Handle("GET /call/", page)
}

// Close ends every room (outcome shutdown) and waits until each call
// completed, its memory saved; then it releases the backend.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	open := make([]*room, 0, len(s.rooms))
	for _, r := range s.rooms {
		if r != nil {
			open = append(open, r)
		}
	}
	s.mu.Unlock()
	for _, r := range open {
		r.abandon(voice.OutcomeShutdown)
	}
	s.cancel()
	s.wg.Wait()
	return s.backend.close()
}

// Join is what the browser needs to join a room.
type Join struct {
	// OfferURL (embedded) is where the browser POSTs its SDP offer
	// ({"type":"offer","sdp":...}) for the box's answer.
	OfferURL string `json:"offerUrl,omitempty"`
	// URL and Token (LiveKit) connect the browser to the LiveKit room as
	// Identity.
	URL      string `json:"url,omitempty"`
	Token    string `json:"token,omitempty"`
	Identity string `json:"identity,omitempty"`
	// ExpiresAt is when the room ends if the browser has not joined.
	ExpiresAt time.Time `json:"expiresAt"`
}

// View is a room as the API shows it.
type View struct {
	ID              string              `json:"id"`
	CallID          string              `json:"callId"`
	Backend         string              `json:"backend,omitempty"`
	Agent           string              `json:"agent"`
	Status          string              `json:"status"`
	CreatedAt       time.Time           `json:"createdAt"`
	Join            *Join               `json:"join,omitempty"`
	Outcome         *voice.Outcome      `json:"outcome"`
	EndReason       *string             `json:"endReason,omitempty"`
	DurationSeconds *float64            `json:"durationSeconds"`
	Transcript      []voice.Entry       `json:"transcript"`
	Memory          *voice.MemoryReport `json:"memory,omitempty"`
}

// room is one browser call.
type room struct {
	id, callID, agent string
	created           time.Time
	svc               *Service
	call              *voice.Call
	log               *slog.Logger

	// Set by the backend's open.
	media    *peerMedia
	answer   func(ctx context.Context, offerSDP string) (string, error) // nil: not signalled over HTTP
	teardown func()                                                     // ends the browser side; called once

	startOnce    sync.Once
	teardownOnce sync.Once
	joinTimer    *time.Timer

	mu        sync.Mutex
	status    string
	connectAt time.Time
}

func roomIDs() (roomID, callID string) {
	u := uuid.NewString()
	return "room_" + u, "call_" + u
}

// callIDOf maps a room id to its call's id (they share the uuid), so a
// room that ended, or that another box carries, is still found.
func callIDOf(roomID string) (string, bool) {
	u, ok := strings.CutPrefix(roomID, "room_")
	if !ok || uuid.Validate(u) != nil {
		return "", false
	}
	return "call_" + u, true
}

// Open opens a room for agent with the caller's explicit identities: the
// call opens at once (snapshot of the memory settings, identity, recall),
// the agent joins, and the browser has JoinTimeout to join. Errors:
// ErrAtCapacity, ErrClosed, voice.ErrUnknownAgent,
// ErrBackend, or a memory error of the call's open.
func (s *Service) Open(ctx context.Context, agent string, ids identity.Set) (View, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return View{}, ErrClosed
	case len(s.rooms) >= s.cfg.Rooms.MaxRooms:
		s.mu.Unlock()
		return View{}, fmt.Errorf("%w (%d rooms)", ErrAtCapacity, s.cfg.Rooms.MaxRooms)
	}
	roomID, callID := roomIDs()
	s.rooms[roomID] = nil // reserve the slot while the call opens
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		delete(s.rooms, roomID)
		s.mu.Unlock()
	}

	started := time.Now()
	call, err := s.cfg.Manager.Open(ctx, voice.CallInfo{ID: callID, Direction: voice.Browser, Agent: agent, Identities: ids,
		SampleRate: s.backend.rate(), MediaTimeout: s.cfg.Rooms.MediaTimeout, MaxDuration: s.cfg.Rooms.MaxCallDuration})
	if err != nil {
		release()
		return View{}, err
	}
	r := &room{id: roomID, callID: callID, agent: agent, created: started, svc: s, call: call, status: StatusWaiting,
		log: s.log.With("room", roomID, "call", callID)}
	join, err := s.backend.open(ctx, r)
	if err != nil {
		r.log.Warn("rooms: backend open failed", "backend", s.backend.name(), "error", err)
		if r.media == nil {
			r.media = newPeerMedia(func([]int16) error { return nil })
		}
		s.mu.Lock()
		s.rooms[roomID] = r
		s.mu.Unlock()
		r.abandon(voice.OutcomeFailed) // the call completes and is recorded
		return View{}, fmt.Errorf("%w: %v", ErrBackend, err)
	}
	join.ExpiresAt = started.Add(s.cfg.Rooms.JoinTimeout)
	s.mu.Lock()
	s.rooms[roomID] = r
	closed := s.closed
	s.mu.Unlock()
	if closed {
		r.abandon(voice.OutcomeShutdown)
		return View{}, ErrClosed
	}
	r.joinTimer = time.AfterFunc(s.cfg.Rooms.JoinTimeout, func() {
		if r.getStatus() == StatusWaiting {
			r.log.Info("rooms: the browser did not join in time")
			r.abandon(voice.OutcomeNoAnswer)
		}
	})
	r.log.Info("rooms: room open", "agent", agent, "backend", s.backend.name(), "openMs", time.Since(started).Milliseconds())
	v := s.view(ctx, r)
	v.Join = &join
	return v, nil
}

func (s *Service) lookup(id string) (*room, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[id]
	return r, r != nil
}

func (s *Service) remove(r *room) {
	s.mu.Lock()
	delete(s.rooms, r.id)
	s.mu.Unlock()
}

func (r *room) getStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// connected starts the call once the browser's audio path is up. The
// controller greets from here on, so nothing plays to a room nobody joined.
func (r *room) connected() {
	r.start(func() {
		r.mu.Lock()
		r.status, r.connectAt = StatusActive, time.Now()
		r.mu.Unlock()
		r.log.Info("rooms: browser joined", "joinMs", time.Since(r.created).Milliseconds())
	})
}

// abandon ends the room with outcome: the controller decides and
// completes (at once for a call that never ran); running the room's call
// frees its slot once it completed.
func (r *room) abandon(outcome voice.Outcome) {
	r.call.End(outcome, "")
	r.media.stop()
	r.start(func() {})
}

// left reports that the browser went away: a caller hang-up.
func (r *room) left() {
	r.call.End(voice.OutcomeCallerHangup, "")
}

func (r *room) start(before func()) {
	r.startOnce.Do(func() {
		if r.joinTimer != nil {
			r.joinTimer.Stop()
		}
		before()
		r.svc.wg.Add(1)
		go r.svc.run(r)
	})
}

// run carries the call until it completed, then frees the room.
func (s *Service) run(r *room) {
	defer s.wg.Done()
	err := r.call.Run(s.ctx, r)
	if err != nil {
		r.log.Warn("rooms: call run", "error", err)
	}
	r.hangup()
	r.mu.Lock()
	r.status = StatusEnded
	r.mu.Unlock()
	s.remove(r)
	r.log.Info("rooms: room closed", "framesIn", r.call.Received(), "framesDropped", r.call.Dropped(),
		"framesOut", r.media.sent.Load())
}

// hangup ends the browser side once.
func (r *room) hangup() {
	r.media.stop()
	r.teardownOnce.Do(func() {
		if r.teardown != nil {
			r.teardown()
		}
	})
}

// WriteFrame sends agent audio to the browser (voice.Transport).
func (r *room) WriteFrame(pcm []int16) error { return r.media.WriteFrame(pcm) }

// Batch is what the agent's frames are queued in (voice.Batcher), nil
// when each goes out as it is written.
func (r *room) Batch() pace.Flusher {
	if r.media == nil || r.media.batch == nil {
		return nil
	}
	return r.media.batch()
}

// ReadBy says whether the caller's packets that arrived by t were all
// handed on (voice.SharedReader).
func (r *room) ReadBy(t time.Time) bool {
	if r.media == nil || r.media.readBy == nil {
		return true
	}
	return r.media.readBy(t)
}

// Talkspurt says the next frame starts a talkspurt (voice.Talkspurter).
func (r *room) Talkspurt() {
	if r.media.mark != nil {
		r.media.mark()
	}
}

// Hangup ends the browser's side (voice.Transport): its peer connection or
// LiveKit participant goes away.
func (r *room) Hangup(context.Context) error {
	r.hangup()
	return nil
}

// Transfer is not available in a browser room.
func (r *room) Transfer(context.Context, string) error { return voice.ErrNoTransfer }

// Get returns the room id's view: live while the room is open, else from
// the call's record. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (View, error) {
	if r, ok := s.lookup(id); ok {
		return s.view(ctx, r), nil
	}
	callID, ok := callIDOf(id)
	if !ok {
		return View{}, ErrNotFound
	}
	rec, err := s.cfg.Manager.Get(ctx, callID)
	if errors.Is(err, voice.ErrNotFound) || (err == nil && rec.Direction != voice.Browser) {
		return View{}, ErrNotFound
	}
	if err != nil {
		return View{}, err
	}
	status := rec.Status
	if status == "ringing" {
		status = StatusWaiting
	}
	return View{ID: id, CallID: rec.ID, Agent: rec.Agent, Status: status, CreatedAt: rec.StartedAt, Outcome: rec.Outcome, EndReason: rec.EndReason,
		DurationSeconds: rec.DurationSeconds, Transcript: nonNil(rec.Transcript), Memory: rec.Memory}, nil
}

// view is a live room: the heard transcript so far comes from the
// controller, the memory report from the call's record.
func (s *Service) view(ctx context.Context, r *room) View {
	v := View{ID: r.id, CallID: r.callID, Backend: s.backend.name(), Agent: r.agent, Status: r.getStatus(), CreatedAt: r.created,
		Transcript: nonNil(r.call.Entries())}
	if rec, err := s.cfg.Manager.Get(ctx, r.callID); err == nil {
		v.Memory = rec.Memory
		if rec.Status == "ended" {
			v.Status, v.Outcome, v.DurationSeconds, v.Transcript = StatusEnded, rec.Outcome, rec.DurationSeconds, nonNil(rec.Transcript)
			v.EndReason = rec.EndReason
		}
	}
	return v
}

func nonNil(e []voice.Entry) []voice.Entry {
	if e == nil {
		return []voice.Entry{}
	}
	return e
}

// End closes room id: the call completes (outcome completed) and saves.
// Errors: ErrNotFound, ErrEnded.
func (s *Service) End(ctx context.Context, id string) error {
	r, ok := s.lookup(id)
	if !ok {
		if _, err := s.Get(ctx, id); err == nil {
			return ErrEnded
		}
		return ErrNotFound
	}
	if r.getStatus() == StatusWaiting {
		r.abandon(voice.OutcomeCancelled)
	} else {
		r.call.End(voice.OutcomeCompleted, "")
	}
	return nil
}

// Answer answers the browser's SDP offer for room id (embedded backend).
// Errors: ErrNotFound, ErrEnded, ErrWrongBackend, ErrAlreadyJoined,
// ErrBadOffer.
func (s *Service) Answer(ctx context.Context, id, offerSDP string) (string, error) {
	r, ok := s.lookup(id)
	if !ok {
		if _, err := s.Get(ctx, id); err == nil {
			return "", ErrEnded
		}
		return "", ErrNotFound
	}
	if r.answer == nil {
		return "", ErrWrongBackend
	}
	return r.answer(ctx, offerSDP)
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Agent      string          `json:"agent"`
		Identities json.RawMessage `json:"identities"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	if b.Agent == "" {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, "agent is required")
	}
	// Only the explicit identities: never the operator's key, a session id
	// or a scalar customer id.
	ids, err := identity.ParseJSONValue(b.Identities, nil)
	if err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	v, err := s.Open(r.Context(), b.Agent, ids)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, v)
	return nil
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	s.mu.Lock()
	open := make([]*room, 0, len(s.rooms))
	for _, rm := range s.rooms {
		if rm != nil {
			open = append(open, rm)
		}
	}
	s.mu.Unlock()
	out := make([]View, 0, len(open))
	for _, rm := range open {
		out = append(out, View{ID: rm.id, CallID: rm.callID, Backend: s.backend.name(), Agent: rm.agent, Status: rm.getStatus(),
			CreatedAt: rm.created, Transcript: []voice.Entry{}})
	}
	api.WriteData(w, http.StatusOK, out)
	return nil
}

// admit refuses a key restricted to a person on another person's room
// (voice.Manager.Admit), before anything of the room is read or changed.
// Errors: ErrNotFound, identity.ErrForbidden.
func (s *Service) admit(ctx context.Context, roomID string) error {
	callID, ok := callIDOf(roomID)
	if !ok {
		return ErrNotFound
	}
	err := s.cfg.Manager.Admit(ctx, callID)
	if errors.Is(err, voice.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	if err := s.admit(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	v, err := s.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (s *Service) end(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.admit(r.Context(), id); err != nil {
		return err
	}
	if err := s.End(r.Context(), id); err != nil {
		return err
	}
	api.WriteData(w, http.StatusAccepted, map[string]string{"id": id, "status": "ending"})
	return nil
}

func (s *Service) offer(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Type string `json:"type"`
		SDP  string `json:"sdp"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	if b.Type != "offer" || b.SDP == "" {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, `send {"type":"offer","sdp":"..."}`)
	}
	if err := s.admit(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	answer, err := s.Answer(r.Context(), r.PathValue("id"), b.SDP)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, map[string]string{"type": "answer", "sdp": answer})
	return nil
}
