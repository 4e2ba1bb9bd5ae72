package rooms

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	lkauth "github.com/livekit/protocol/auth"
	"github.com/livekit/protocol/livekit"
	lklogger "github.com/livekit/protocol/logger"
	lksdk "github.com/livekit/server-sdk-go/v2"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/opus"
	"github.com/stackbone/box/voice"
)

// liveKitRate is the call's sample rate on LiveKit: wideband speech for
// speech-to-text. Opus itself runs at 48 kHz on the wire; libopus resamples
// inside the encoder and decoder.
const liveKitRate = 16000

// Participant identities in a LiveKit room.
const (
	agentIdentity  = "agent"
	callerIdentity = "caller"
)

// liveKit is the backend where a LiveKit server carries the media: the box
// creates the room, mints the browser's token, and joins the room as the
// agent participant (pion, through the LiveKit Go SDK), subscribing to the
// caller's audio and publishing its own, Opus both ways.
type liveKit struct {
	cfg    config.LiveKit
	log    *slog.Logger
	client *lksdk.RoomServiceClient
}

func newLiveKit(cfg config.LiveKit, log *slog.Logger) (*liveKit, error) {
	if !opus.Available() {
		return nil, fmt.Errorf("rooms: LiveKit is configured but %w", opus.ErrUnavailable)
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = cfg.URL
	}
	// The SDK logs its peer connections through one process-wide logger;
	// the box has one rooms service, whose logger it takes.
	lksdk.SetLogger(sdkLogger(log))
	return &liveKit{cfg: cfg, log: log, client: lksdk.NewRoomServiceClient(cfg.URL, cfg.APIKey, cfg.APISecret)}, nil
}

func (l *liveKit) name() string { return BackendLiveKit }
func (l *liveKit) rate() int    { return liveKitRate }

func (l *liveKit) close() error { return nil }

// liveKitPeer is the agent's side of one LiveKit room.
type liveKitPeer struct {
	l     *liveKit
	r     *room
	codec opus.Codec
	track *lksdk.LocalTrack

	mu      sync.Mutex
	room    *lksdk.Room
	reading bool
}

func (l *liveKit) open(ctx context.Context, r *room) (Join, error) {
	codec, err := opus.New(liveKitRate)
	if err != nil {
		return Join{}, err
	}
	p := &liveKitPeer{l: l, r: r, codec: codec}
	r.media = newPeerMedia(p.send)
	r.teardown = p.close
	joinTimeout := r.svc.cfg.Rooms.JoinTimeout
	if _, err := l.client.CreateRoom(ctx, &livekit.CreateRoomRequest{
		Name: r.id,
		// LiveKit closes a room nobody joined, and one the caller left,
		// on its own as well.
		EmptyTimeout:     uint32(joinTimeout/time.Second) + 10,
		DepartureTimeout: 5,
	}); err != nil {
		return Join{}, fmt.Errorf("create room: %w", err)
	}
	if p.track, err = lksdk.NewLocalTrack(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}); err != nil {
		return Join{}, fmt.Errorf("agent track: %w", err)
	}
	cb := lksdk.NewRoomCallback()
	cb.OnTrackSubscribed = func(t *webrtc.TrackRemote, _ *lksdk.RemoteTrackPublication, rp *lksdk.RemoteParticipant) {
		if rp.Identity() != callerIdentity || t.Kind() != webrtc.RTPCodecTypeAudio {
			return
		}
		p.mu.Lock()
		first := !p.reading
		p.reading = true
		p.mu.Unlock()
		if first {
			go p.read(t)
			r.connected()
		}
	}
	cb.OnParticipantDisconnected = func(rp *lksdk.RemoteParticipant) {
		if rp.Identity() == callerIdentity {
			r.left() // the room emptied: a caller hang-up
		}
	}
	cb.OnDisconnected = func() { r.left() }
	lkRoom, err := lksdk.ConnectToRoom(l.cfg.URL, lksdk.ConnectInfo{
		APIKey: l.cfg.APIKey, APISecret: l.cfg.APISecret, RoomName: r.id,
		ParticipantIdentity: agentIdentity, ParticipantName: r.agent, ParticipantKind: lksdk.ParticipantAgent,
	}, cb, lksdk.WithAutoSubscribe(true), lksdk.WithLogger(sdkLogger(r.log)))
	if err != nil {
		p.deleteRoom()
		return Join{}, fmt.Errorf("agent join: %w", err)
	}
	p.mu.Lock()
	p.room = lkRoom
	p.mu.Unlock()
	if _, err := lkRoom.LocalParticipant.PublishTrack(p.track, &lksdk.TrackPublicationOptions{
		Name: "agent", Source: livekit.TrackSource_MICROPHONE,
	}); err != nil {
		p.close()
		return Join{}, fmt.Errorf("agent publish: %w", err)
	}
	yes := true
	token, err := lkauth.NewAccessToken(l.cfg.APIKey, l.cfg.APISecret).
		SetIdentity(callerIdentity).SetName("Caller").
		SetValidFor(joinTimeout + time.Hour).
		SetVideoGrant(&lkauth.VideoGrant{RoomJoin: true, Room: r.id, CanPublish: &yes, CanSubscribe: &yes}).
		ToJWT()
	if err != nil {
		p.close()
		return Join{}, fmt.Errorf("token: %w", err)
	}
	return Join{URL: l.cfg.PublicURL, Token: token, Identity: callerIdentity}, nil
}

// send encodes one agent frame into one Opus packet.
func (p *liveKitPeer) send(pcm []int16) error {
	pkt, err := p.codec.Encode(pcm)
	if err != nil {
		return err
	}
	return p.track.WriteSample(media.Sample{Data: pkt, Duration: voice.FrameDuration}, nil)
}

// read decodes the caller's Opus packets into frames for the controller.
func (p *liveKitPeer) read(t *webrtc.TrackRemote) {
	for {
		pkt, _, err := t.ReadRTP()
		if err != nil {
			return // unsubscribed or disconnected; the callbacks report the end
		}
		if len(pkt.Payload) == 0 {
			p.r.call.Alive()
			continue
		}
		pcm, err := p.codec.Decode(pkt.Payload)
		if err != nil {
			p.r.call.Alive()
			continue
		}
		p.r.call.Hear(pcm)
	}
}

// close leaves and deletes the room, which disconnects the browser.
func (p *liveKitPeer) close() {
	p.mu.Lock()
	lkRoom := p.room
	p.room = nil
	p.mu.Unlock()
	if lkRoom != nil {
		lkRoom.Disconnect()
	}
	p.deleteRoom()
}

func (p *liveKitPeer) deleteRoom() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.l.client.DeleteRoom(ctx, &livekit.DeleteRoomRequest{Room: p.r.id}); err != nil {
		p.r.log.Debug("rooms: delete LiveKit room", "error", err)
	}
}

// sdkLogger routes the LiveKit SDK's and pion's logs to the room's logger,
// its chatter (connection states, every negotiation) at debug level.
func sdkLogger(log *slog.Logger) lklogger.Logger {
	return lklogger.LogRLogger(logr.FromSlogHandler(quietHandler{log.Handler()}))
}

// quietHandler demotes records below warning to debug.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(a)}
}
func (h quietHandler) WithGroup(n string) slog.Handler { return quietHandler{h.Handler.WithGroup(n)} }
