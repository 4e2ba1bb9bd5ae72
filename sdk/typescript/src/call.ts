// A browser call from a web page: opens a room (voice.rooms.create), joins
// it with the page's microphone, plays the agent, and follows the room
// (voice.rooms.get) for the heard transcript until the call ends. The
// room's answer says how to join: the box's embedded WebRTC peer (one SDP
// offer and answer, voice.rooms.offer), or a LiveKit server (its URL and a
// token), joined with the LiveKit browser client the page passes in, so
// the SDK itself carries no media library.
//
// Browser-only work happens when a call is placed, never on import, so
// Node can import this module (placing a call there fails with
// not_configured).
import type { Room, RoomJoin, TranscriptEntry } from './api.gen.js';
import { SdkError, type Result, type StackboneClient } from './index.js';

/**
 * Where the call is: opening (the room is being created), joining (the
 * WebRTC offer and answer), joined (media is set up, the box has not yet
 * reported the call active), active, ending (hung up), ended or failed.
 */
export type CallState = 'opening' | 'joining' | 'joined' | 'active' | 'ending' | 'ended' | 'failed';

/** How a call ended. */
export interface CallEnd {
  /** ended, or failed when the call never ran or ended with the outcome failed. */
  state: 'ended' | 'failed';
  /** The room as the box last showed it, null when none was opened. */
  room: Room | null;
  /** The call's outcome (completed, failed, no_answer, ...), when the box recorded one. */
  outcome: string | null;
  /** Why the call failed or ended early: the box's end reason, or the error's message. */
  reason: string | null;
  /** The error that failed the call (the API's code and message), if any. */
  error: SdkError | null;
}

/**
 * The part of the LiveKit browser client a call uses: the livekit-client
 * module itself (`import * as livekit from 'livekit-client'`), or the
 * LivekitClient global of its UMD build.
 */
export interface LivekitClientModule {
  Room: new (options?: { adaptiveStream?: boolean; dynacast?: boolean; stopLocalTrackOnUnpublish?: boolean }) => LivekitRoom;
  RoomEvent: { TrackSubscribed: string; ConnectionStateChanged: string };
  Track: { Source: { Microphone: string } };
}

/** A LiveKit room, as far as a call drives it. */
export interface LivekitRoom {
  on(event: string, listener: (...args: never[]) => void): unknown;
  connect(url: string, token: string): Promise<void>;
  disconnect(): Promise<void>;
  localParticipant: { publishTrack(track: MediaStreamTrack, options?: { source?: string }): Promise<unknown> };
}

/** The events of a call and what each carries. */
export interface CallEvents {
  /** The call's state changed. */
  state: CallState;
  /**
   * The media connection's state changed (connecting, connected,
   * disconnected, failed, closed): the WebRTC connection's on the embedded
   * peer; on LiveKit, the room's (reconnecting is disconnected, and a room
   * that left is closed).
   */
  connection: RTCPeerConnectionState;
  /** The agent's audio started to play: the stream, to measure or show. */
  audio: MediaStream;
  /** The heard transcript changed: every entry so far, oldest first. */
  transcript: TranscriptEntry[];
  /** The room as the box shows it, each time it was read. */
  room: Room;
  /** The call ended; emitted once. */
  end: CallEnd;
}

export interface CallOptions {
  /** The agent to call. */
  agent: string;
  /** The person's identities (phoneNumber, email, customerId, ...) for the agent's memory. */
  identities?: Record<string, string>;
  /** The microphone: a stream to send, or constraints for getUserMedia. Default: the default microphone. */
  microphone?: MediaStream | MediaTrackConstraints;
  /** Where the agent is played: an audio element, or null to play nothing. Default: a hidden audio element added to the page. */
  audio?: HTMLMediaElement | null;
  /** How often the room is read for the transcript, in milliseconds. Default 500. */
  pollMs?: number;
  /** How long the offer waits for its ICE candidates, in milliseconds. Default 3000. */
  iceGatheringTimeoutMs?: number;
  /**
   * The LiveKit browser client, to join rooms on a box whose rooms run on
   * LiveKit; without it such a room ends the call with not_configured.
   */
  livekit?: LivekitClientModule;
  /** Hangs up when aborted. */
  signal?: AbortSignal;
}

type Listener<K extends keyof CallEvents> = (value: CallEvents[K]) => void;

/** One browser call; made by placeCall. */
export class BrowserCall {
  /** Where the call is. */
  state: CallState = 'opening';
  /** The room's id, once it is open. */
  roomId: string | null = null;
  /** The call's id (its record: voice.calls.get), once the room is open. */
  callId: string | null = null;
  /** The room as the box last showed it. */
  room: Room | null = null;
  /** The heard transcript so far. */
  transcript: TranscriptEntry[] = [];
  /** Resolves once, when the call has ended. */
  readonly ended: Promise<CallEnd>;

  readonly #client: StackboneClient;
  readonly #o: CallOptions;
  readonly #listeners = new Map<keyof CallEvents, Set<(value: never) => void>>();
  #resolveEnded!: (end: CallEnd) => void;
  #pc: RTCPeerConnection | null = null;
  #lk: LivekitRoom | null = null;
  #mic: MediaStream | null = null;
  #ownMic = false;
  #audio: HTMLMediaElement | null = null;
  #ownAudio = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #hungUp = false;
  #endAsked = false; // the box accepted the end: hanging up again does nothing
  #done = false;
  // Leaving the page stops the media at once, so the box ends the call as
  // the caller's hang-up rather than waiting for the media to time out.
  readonly #leave = (): void => this.#teardown();

  constructor(client: StackboneClient, options: CallOptions) {
    this.#client = client;
    this.#o = options;
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
    options.signal?.addEventListener('abort', () => void this.hangup(), { once: true });
  }

  /** Calls fn on each event of type; returns a function that stops it. */
  on<K extends keyof CallEvents>(type: K, fn: Listener<K>): () => void {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, (set = new Set()));
    const f = fn as (value: never) => void;
    set.add(f);
    return () => void set.delete(f);
  }

  #emit<K extends keyof CallEvents>(type: K, value: CallEvents[K]): void {
    for (const fn of (this.#listeners.get(type) ?? []) as Set<Listener<K>>) {
      try {
        fn(value);
      } catch (err) {
        setTimeout(() => {
          throw err;
        });
      }
    }
  }

  #set(state: CallState): void {
    if (this.state === state) return;
    this.state = state;
    this.#emit('state', state);
  }

  /**
   * Hangs up: the media stops at once and the box ends the room; the end
   * event follows with the room's final state. Hanging up a call that
   * ended does nothing.
   */
  async hangup(): Promise<Result<void>> {
    if (this.#done || this.#endAsked) return { data: undefined, error: null };
    this.#hungUp = true;
    // A LiveKit room is left only once the box took the end: the box sees
    // a caller leave the room at once, and would record a caller's hang-up
    // instead of the end asked for. The microphone stops now all the same.
    const room = this.roomId ? this.#lk : null;
    if (room) this.#lk = null;
    this.#teardown();
    if (!this.roomId) return { data: undefined, error: null }; // the opening sees #hungUp
    this.#set('ending');
    const r = await this.#client.voice.rooms.end(this.roomId);
    if (room) void room.disconnect().catch(() => {});
    // Read the room at once, ended or not: without the end (the box
    // unreachable) the room ends by itself when no audio arrives.
    this.#poll(0);
    if (r.error && r.error.code !== 'room_ended') return { data: null, error: r.error };
    this.#endAsked = true;
    return { data: undefined, error: null };
  }

  /** Opens the room and joins it; failures end the call. */
  async start(): Promise<void> {
    if (this.#o.livekit !== undefined && !isLivekitClient(this.#o.livekit)) {
      return this.#fail(
        new SdkError('invalid_request', 'livekit must be the LiveKit browser client: the livekit-client module, or the LivekitClient global of its UMD build'),
      );
    }
    const w = globalThis as { RTCPeerConnection?: unknown; navigator?: Navigator };
    if (typeof w.RTCPeerConnection !== 'function' || !w.navigator?.mediaDevices?.getUserMedia) {
      return this.#fail(new SdkError('not_configured', 'placing a call needs a browser with WebRTC and a microphone'));
    }
    if (typeof addEventListener === 'function') addEventListener('pagehide', this.#leave);
    this.#emit('state', 'opening');
    const opened = await this.#client.voice.rooms.create({ agent: this.#o.agent, identities: this.#o.identities });
    if (opened.error) return this.#fail(opened.error);
    const room = opened.data;
    this.room = room;
    this.roomId = room.id;
    this.callId = room.callId;
    this.#emit('room', room);
    if (this.#hungUp) return this.#endRoom(null);
    const join = room.join;
    const onLiveKit = !join?.offerUrl;
    if (onLiveKit && !(join?.url && join.token)) {
      return this.#endRoom(new SdkError('invalid_response', 'the room says neither how to join the embedded peer nor its LiveKit server'));
    }
    if (onLiveKit && !this.#o.livekit) {
      return this.#endRoom(
        new SdkError(
          'not_configured',
          "this box's rooms run on LiveKit: pass the LiveKit browser client as the livekit option (the box serves its UMD build at /call/livekit-client.umd.js)",
        ),
      );
    }
    this.#set('joining');
    try {
      await (onLiveKit ? this.#joinLiveKit(this.#o.livekit!, join!) : this.#joinPeer(room.id));
    } catch (err) {
      if (this.#hungUp) return this.#endRoom(null);
      const e = err instanceof SdkError ? err : new SdkError('join_failed', `joining the call: ${(err as Error)?.message ?? err}`, 0, undefined, { cause: err });
      return this.#endRoom(e);
    }
    if (this.#hungUp) return;
    this.#set('joined');
    this.#poll();
  }

  /** Takes the microphone; false when the call was hung up meanwhile. */
  async #microphone(): Promise<boolean> {
    const mic = this.#o.microphone;
    if (mic && typeof (mic as MediaStream).getAudioTracks === 'function') {
      this.#mic = mic as MediaStream;
      return true;
    }
    this.#mic = await navigator.mediaDevices.getUserMedia({ audio: (mic as MediaTrackConstraints) ?? true, video: false });
    this.#ownMic = true;
    if (!this.#hungUp) return true;
    this.#teardown(); // hung up while the browser asked for the microphone
    return false;
  }

  /** Joins the box's embedded peer: one SDP offer with its candidates, and its answer. */
  async #joinPeer(roomId: string): Promise<void> {
    if (!(await this.#microphone())) return;
    const mic = this.#mic!;
    const pc = new RTCPeerConnection({ iceServers: [] });
    this.#pc = pc;
    for (const t of mic.getAudioTracks()) pc.addTrack(t, mic);
    pc.ontrack = (ev) => this.#play(ev.streams[0] ?? new MediaStream([ev.track]));
    pc.onconnectionstatechange = () => this.#emit('connection', pc.connectionState);
    await pc.setLocalDescription(await pc.createOffer());
    // No trickle: the offer goes with its candidates.
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve();
      const t = setTimeout(resolve, this.#o.iceGatheringTimeoutMs ?? 3000);
      pc.addEventListener('icegatheringstatechange', () => {
        if (pc.iceGatheringState === 'complete') {
          clearTimeout(t);
          resolve();
        }
      });
    });
    if (this.#hungUp) return;
    const answer = await this.#client.voice.rooms.offer(roomId, { type: 'offer', sdp: pc.localDescription!.sdp });
    if (answer.error) throw answer.error;
    if (this.#pc !== pc) return; // hung up meanwhile
    await pc.setRemoteDescription({ type: 'answer', sdp: answer.data.sdp });
  }

  /** Joins the room on the LiveKit server with the token the box signed, and publishes the microphone. */
  async #joinLiveKit(lk: LivekitClientModule, join: RoomJoin): Promise<void> {
    if (!(await this.#microphone())) return;
    const mic = this.#mic!;
    // The agent is one audio track: nothing to adapt to the page's layout.
    // A microphone the page passed is the page's to stop, as on the
    // embedded peer.
    const room = new lk.Room({ adaptiveStream: false, dynacast: false, stopLocalTrackOnUnpublish: this.#ownMic });
    if (![room.on, room.connect, room.disconnect, room.localParticipant?.publishTrack].every((f) => typeof f === 'function')) {
      throw new SdkError('invalid_request', 'livekit: its rooms lack on, connect, disconnect or localParticipant.publishTrack');
    }
    this.#lk = room;
    room.on(lk.RoomEvent.TrackSubscribed, (track: { kind?: string; mediaStreamTrack?: MediaStreamTrack }) => {
      if (this.#lk === room && track.kind === 'audio' && track.mediaStreamTrack) this.#play(new MediaStream([track.mediaStreamTrack]));
    });
    room.on(lk.RoomEvent.ConnectionStateChanged, (state: string) => {
      if (this.#lk === room) this.#emit('connection', liveKitConnection[state] ?? 'disconnected');
    });
    await room.connect(join.url!, join.token!);
    for (const t of mic.getAudioTracks()) {
      if (this.#lk !== room) return; // hung up meanwhile
      await room.localParticipant.publishTrack(t, { source: lk.Track.Source.Microphone });
    }
  }

  #play(stream: MediaStream): void {
    if (this.#o.audio === null) return this.#emit('audio', stream);
    if (!this.#audio) {
      if (this.#o.audio) {
        this.#audio = this.#o.audio;
      } else {
        const el = document.createElement('audio');
        el.autoplay = true;
        el.hidden = true;
        document.body.append(el);
        this.#audio = el;
        this.#ownAudio = true;
      }
    }
    this.#audio.srcObject = stream;
    this.#audio.play().catch(() => {});
    this.#emit('audio', stream);
  }

  /** Stops the media: the connection, the microphone this call opened and its audio element. */
  #teardown(): void {
    if (this.#pc) {
      this.#pc.close();
      this.#pc = null;
    }
    if (this.#lk) {
      void this.#lk.disconnect().catch(() => {});
      this.#lk = null;
    }
    if (this.#mic && this.#ownMic) this.#mic.getTracks().forEach((t) => t.stop());
    this.#mic = null;
    if (this.#audio) {
      this.#audio.srcObject = null;
      if (this.#ownAudio) this.#audio.remove();
      this.#audio = null;
    }
  }

  /** Reads the room until it has ended. */
  #poll(delay = this.#o.pollMs ?? 500): void {
    clearTimeout(this.#timer);
    if (this.#done || !this.roomId) return;
    const id = this.roomId;
    this.#timer = setTimeout(async () => {
      const r = await this.#client.voice.rooms.get(id);
      if (this.#done) return;
      if (!r.error) {
        this.#show(r.data);
        if (r.data.status === 'ended') return this.#finish(r.data, null);
        if (r.data.status === 'active' && !this.#hungUp) this.#set('active');
      }
      this.#poll();
    }, delay);
  }

  #show(room: Room): void {
    this.room = room;
    this.#emit('room', room);
    const t = room.transcript ?? [];
    if (JSON.stringify(t) !== JSON.stringify(this.transcript)) {
      this.transcript = t;
      this.#emit('transcript', t);
    }
  }

  /** Ends the open room (failing the call with error, if any), then waits for its end. */
  async #endRoom(error: SdkError | null): Promise<void> {
    this.#teardown();
    if (this.roomId) await this.#client.voice.rooms.end(this.roomId);
    if (error) return this.#fail(error);
    this.#set('ending');
    this.#poll();
  }

  #fail(error: SdkError): void {
    this.#finish(this.room, error);
  }

  #finish(room: Room | null, error: SdkError | null): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#teardown();
    if (typeof removeEventListener === 'function') removeEventListener('pagehide', this.#leave);
    const outcome = room?.status === 'ended' ? room.outcome : null;
    const state = error || outcome === 'failed' ? 'failed' : 'ended';
    const end: CallEnd = { state, room, outcome, reason: error ? error.message : (room?.endReason ?? null), error };
    this.#set(state);
    this.#emit('end', end);
    this.#resolveEnded(end);
  }
}

const liveKitConnection: Record<string, RTCPeerConnectionState> = {
  connecting: 'connecting',
  connected: 'connected',
  reconnecting: 'disconnected',
  signalReconnecting: 'disconnected',
  disconnected: 'closed',
};

/**
 * Whether m has what a call uses of the LiveKit browser client. A room's
 * methods are checked only once one is made: the client defines connect
 * and disconnect on each room, not on its prototype.
 */
function isLivekitClient(m: unknown): m is LivekitClientModule {
  const lk = m as Partial<LivekitClientModule> | null | undefined;
  return (
    typeof lk?.Room === 'function' &&
    typeof lk.RoomEvent?.TrackSubscribed === 'string' &&
    typeof lk.RoomEvent.ConnectionStateChanged === 'string' &&
    typeof lk.Track?.Source?.Microphone === 'string'
  );
}

/**
 * Places a browser call to an agent with the page's microphone: the room
 * is opened and joined at once, on the box's embedded peer or, with the
 * livekit option, on LiveKit; listen with call.on('state' | 'connection'
 * | 'audio' | 'transcript' | 'room' | 'end'), hang up with call.hangup().
 */
export function placeCall(client: StackboneClient, options: CallOptions): BrowserCall {
  const call = new BrowserCall(client, options);
  // Listeners attached right after placeCall see the first state.
  queueMicrotask(() => void call.start());
  return call;
}
