// Built from sdk/typescript/src/call.ts by `npm run served` in sdk/typescript. Do not edit.
import { SdkError } from './index.js';
/** One browser call; made by placeCall. */
export class BrowserCall {
    /** Where the call is. */
    state = 'opening';
    /** The room's id, once it is open. */
    roomId = null;
    /** The call's id (its record: voice.calls.get), once the room is open. */
    callId = null;
    /** The room as the box last showed it. */
    room = null;
    /** The heard transcript so far. */
    transcript = [];
    /** Resolves once, when the call has ended. */
    ended;
    #client;
    #o;
    #listeners = new Map();
    #resolveEnded;
    #pc = null;
    #lk = null;
    #mic = null;
    #ownMic = false;
    #audio = null;
    #ownAudio = false;
    #timer;
    #hungUp = false;
    #endAsked = false; // the box accepted the end: hanging up again does nothing
    #done = false;
    // Leaving the page stops the media at once, so the box ends the call as
    // the caller's hang-up rather than waiting for the media to time out.
    #leave = () => this.#teardown();
    constructor(client, options) {
        this.#client = client;
        this.#o = options;
        this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
        options.signal?.addEventListener('abort', () => void this.hangup(), { once: true });
    }
    /** Calls fn on each event of type; returns a function that stops it. */
    on(type, fn) {
        let set = this.#listeners.get(type);
        if (!set)
            this.#listeners.set(type, (set = new Set()));
        const f = fn;
        set.add(f);
        return () => void set.delete(f);
    }
    #emit(type, value) {
        for (const fn of (this.#listeners.get(type) ?? [])) {
            try {
                fn(value);
            }
            catch (err) {
                setTimeout(() => {
                    throw err;
                });
            }
        }
    }
    #set(state) {
        if (this.state === state)
            return;
        this.state = state;
        this.#emit('state', state);
    }
    /**
     * Hangs up: the media stops at once and the box ends the room; the end
     * event follows with the room's final state. Hanging up a call that
     * ended does nothing.
     */
    async hangup() {
        if (this.#done || this.#endAsked)
            return { data: undefined, error: null };
        this.#hungUp = true;
        // A LiveKit room is left only once the box took the end: the box sees
        // a caller leave the room at once, and would record a caller's hang-up
        // instead of the end asked for. The microphone stops now all the same.
        const room = this.roomId ? this.#lk : null;
        if (room)
            this.#lk = null;
        this.#teardown();
        if (!this.roomId)
            return { data: undefined, error: null }; // the opening sees #hungUp
        this.#set('ending');
        const r = await this.#client.voice.rooms.end(this.roomId);
        if (room)
            void room.disconnect().catch(() => { });
        // Read the room at once, ended or not: without the end (the box
        // unreachable) the room ends by itself when no audio arrives.
        this.#poll(0);
        if (r.error && r.error.code !== 'room_ended')
            return { data: null, error: r.error };
        this.#endAsked = true;
        return { data: undefined, error: null };
    }
    /** Opens the room and joins it; failures end the call. */
    async start() {
        if (this.#o.livekit !== undefined && !isLivekitClient(this.#o.livekit)) {
            return this.#fail(new SdkError('invalid_request', 'livekit must be the LiveKit browser client: the livekit-client module, or the LivekitClient global of its UMD build'));
        }
        const w = globalThis;
        if (typeof w.RTCPeerConnection !== 'function' || !w.navigator?.mediaDevices?.getUserMedia) {
            return this.#fail(new SdkError('not_configured', 'placing a call needs a browser with WebRTC and a microphone'));
        }
        if (typeof addEventListener === 'function')
            addEventListener('pagehide', this.#leave);
        this.#emit('state', 'opening');
        const opened = await this.#client.voice.rooms.create({ agent: this.#o.agent, identities: this.#o.identities });
        if (opened.error)
            return this.#fail(opened.error);
        const room = opened.data;
        this.room = room;
        this.roomId = room.id;
        this.callId = room.callId;
        this.#emit('room', room);
        if (this.#hungUp)
            return this.#endRoom(null);
        const join = room.join;
        const onLiveKit = !join?.offerUrl;
        if (onLiveKit && !(join?.url && join.token)) {
            return this.#endRoom(new SdkError('invalid_response', 'the room says neither how to join the embedded peer nor its LiveKit server'));
        }
        if (onLiveKit && !this.#o.livekit) {
            return this.#endRoom(new SdkError('not_configured', "this box's rooms run on LiveKit: pass the LiveKit browser client as the livekit option (the box serves its UMD build at /call/livekit-client.umd.js)"));
        }
        this.#set('joining');
        try {
            await (onLiveKit ? this.#joinLiveKit(this.#o.livekit, join) : this.#joinPeer(room.id));
        }
        catch (err) {
            if (this.#hungUp)
                return this.#endRoom(null);
            const e = err instanceof SdkError ? err : new SdkError('join_failed', `joining the call: ${err?.message ?? err}`, 0, undefined, { cause: err });
            return this.#endRoom(e);
        }
        if (this.#hungUp)
            return;
        this.#set('joined');
        this.#poll();
    }
    /** Takes the microphone; false when the call was hung up meanwhile. */
    async #microphone() {
        const mic = this.#o.microphone;
        if (mic && typeof mic.getAudioTracks === 'function') {
            this.#mic = mic;
            return true;
        }
        this.#mic = await navigator.mediaDevices.getUserMedia({ audio: mic ?? true, video: false });
        this.#ownMic = true;
        if (!this.#hungUp)
            return true;
        this.#teardown(); // hung up while the browser asked for the microphone
        return false;
    }
    /** Joins the box's embedded peer: one SDP offer with its candidates, and its answer. */
    async #joinPeer(roomId) {
        if (!(await this.#microphone()))
            return;
        const mic = this.#mic;
        const pc = new RTCPeerConnection({ iceServers: [] });
        this.#pc = pc;
        for (const t of mic.getAudioTracks())
            pc.addTrack(t, mic);
        pc.ontrack = (ev) => this.#play(ev.streams[0] ?? new MediaStream([ev.track]));
        pc.onconnectionstatechange = () => this.#emit('connection', pc.connectionState);
        await pc.setLocalDescription(await pc.createOffer());
        // No trickle: the offer goes with its candidates.
        await new Promise((resolve) => {
            if (pc.iceGatheringState === 'complete')
                return resolve();
            const t = setTimeout(resolve, this.#o.iceGatheringTimeoutMs ?? 3000);
            pc.addEventListener('icegatheringstatechange', () => {
                if (pc.iceGatheringState === 'complete') {
                    clearTimeout(t);
                    resolve();
                }
            });
        });
        if (this.#hungUp)
            return;
        const answer = await this.#client.voice.rooms.offer(roomId, { type: 'offer', sdp: pc.localDescription.sdp });
        if (answer.error)
            throw answer.error;
        if (this.#pc !== pc)
            return; // hung up meanwhile
        await pc.setRemoteDescription({ type: 'answer', sdp: answer.data.sdp });
    }
    /** Joins the room on the LiveKit server with the token the box signed, and publishes the microphone. */
    async #joinLiveKit(lk, join) {
        if (!(await this.#microphone()))
            return;
        const mic = this.#mic;
        // The agent is one audio track: nothing to adapt to the page's layout.
        // A microphone the page passed is the page's to stop, as on the
        // embedded peer.
        const room = new lk.Room({ adaptiveStream: false, dynacast: false, stopLocalTrackOnUnpublish: this.#ownMic });
        if (![room.on, room.connect, room.disconnect, room.localParticipant?.publishTrack].every((f) => typeof f === 'function')) {
            throw new SdkError('invalid_request', 'livekit: its rooms lack on, connect, disconnect or localParticipant.publishTrack');
        }
        this.#lk = room;
        room.on(lk.RoomEvent.TrackSubscribed, (track) => {
            if (this.#lk === room && track.kind === 'audio' && track.mediaStreamTrack)
                this.#play(new MediaStream([track.mediaStreamTrack]));
        });
        room.on(lk.RoomEvent.ConnectionStateChanged, (state) => {
            if (this.#lk === room)
                this.#emit('connection', liveKitConnection[state] ?? 'disconnected');
        });
        await room.connect(join.url, join.token);
        for (const t of mic.getAudioTracks()) {
            if (this.#lk !== room)
                return; // hung up meanwhile
            await room.localParticipant.publishTrack(t, { source: lk.Track.Source.Microphone });
        }
    }
    #play(stream) {
        if (this.#o.audio === null)
            return this.#emit('audio', stream);
        if (!this.#audio) {
            if (this.#o.audio) {
                this.#audio = this.#o.audio;
            }
            else {
                const el = document.createElement('audio');
                el.autoplay = true;
                el.hidden = true;
                document.body.append(el);
                this.#audio = el;
                this.#ownAudio = true;
            }
        }
        this.#audio.srcObject = stream;
        this.#audio.play().catch(() => { });
        this.#emit('audio', stream);
    }
    /** Stops the media: the connection, the microphone this call opened and its audio element. */
    #teardown() {
        if (this.#pc) {
            this.#pc.close();
            this.#pc = null;
        }
        if (this.#lk) {
            void this.#lk.disconnect().catch(() => { });
            this.#lk = null;
        }
        if (this.#mic && this.#ownMic)
            this.#mic.getTracks().forEach((t) => t.stop());
        this.#mic = null;
        if (this.#audio) {
            this.#audio.srcObject = null;
            if (this.#ownAudio)
                this.#audio.remove();
            this.#audio = null;
        }
    }
    /** Reads the room until it has ended. */
    #poll(delay = this.#o.pollMs ?? 500) {
        clearTimeout(this.#timer);
        if (this.#done || !this.roomId)
            return;
        const id = this.roomId;
        this.#timer = setTimeout(async () => {
            const r = await this.#client.voice.rooms.get(id);
            if (this.#done)
                return;
            if (!r.error) {
                this.#show(r.data);
                if (r.data.status === 'ended')
                    return this.#finish(r.data, null);
                if (r.data.status === 'active' && !this.#hungUp)
                    this.#set('active');
            }
            this.#poll();
        }, delay);
    }
    #show(room) {
        this.room = room;
        this.#emit('room', room);
        const t = room.transcript ?? [];
        if (JSON.stringify(t) !== JSON.stringify(this.transcript)) {
            this.transcript = t;
            this.#emit('transcript', t);
        }
    }
    /** Ends the open room (failing the call with error, if any), then waits for its end. */
    async #endRoom(error) {
        this.#teardown();
        if (this.roomId)
            await this.#client.voice.rooms.end(this.roomId);
        if (error)
            return this.#fail(error);
        this.#set('ending');
        this.#poll();
    }
    #fail(error) {
        this.#finish(this.room, error);
    }
    #finish(room, error) {
        if (this.#done)
            return;
        this.#done = true;
        clearTimeout(this.#timer);
        this.#teardown();
        if (typeof removeEventListener === 'function')
            removeEventListener('pagehide', this.#leave);
        const outcome = room?.status === 'ended' ? room.outcome : null;
        const state = error || outcome === 'failed' ? 'failed' : 'ended';
        const end = { state, room, outcome, reason: error ? error.message : (room?.endReason ?? null), error };
        this.#set(state);
        this.#emit('end', end);
        this.#resolveEnded(end);
    }
}
const liveKitConnection = {
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
function isLivekitClient(m) {
    const lk = m;
    return (typeof lk?.Room === 'function' &&
        typeof lk.RoomEvent?.TrackSubscribed === 'string' &&
        typeof lk.RoomEvent.ConnectionStateChanged === 'string' &&
        typeof lk.Track?.Source?.Microphone === 'string');
}
/**
 * Places a browser call to an agent with the page's microphone: the room
 * is opened and joined at once, on the box's embedded peer or, with the
 * livekit option, on LiveKit; listen with call.on('state' | 'connection'
 * | 'audio' | 'transcript' | 'room' | 'end'), hang up with call.hangup().
 */
export function placeCall(client, options) {
    const call = new BrowserCall(client, options);
    // Listeners attached right after placeCall see the first state.
    queueMicrotask(() => void call.start());
    return call;
}
