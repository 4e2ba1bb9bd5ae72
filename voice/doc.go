// Package voice is the call controller: it carries a spoken conversation
// between a caller and an agent over whatever transport brings the audio
// (RTP on a SIP call, WebRTC in a browser room), and gives the call its
// memory lifecycle.
//
// A transport opens a call before it answers (Manager.Open: the agent, a
// snapshot of its memory settings, the identity, the recall), pushes the
// caller's decoded audio (Call.Hear) and hands the call its Transport for
// agent audio and hang-up (Call.Run). From then on the call is carried by
// one goroutine, the call's owner (see Call.live): it alone decides how the
// call ends and completes it once. Transports never end a call themselves;
// they only report what they saw (Call.End with an Outcome), as do the
// call's own parts (the media timeout, a failed write).
//
//	call, err := manager.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "receptionist",
//		PhoneNumber: "+34600111222", SampleRate: 8000, MediaTimeout: 30 * time.Second})
//	go readRTP(func(pcm []int16) { call.Hear(pcm) })
//	onBye(func() { call.End(voice.OutcomeCallerHangup, "") })
//	err = call.Run(ctx, transport) // returns after the call's one completion
//
// Inside a call, caller frames go through voice activity detection and
// endpointing on the transport's goroutine as they arrive (gaps, news of a
// transcript and the media timeout on the call's listen goroutine; a gap
// is silence only once a shared port's reader has read past it,
// SharedReader); each caller turn is a turn object (speech-to-text, the agent
// streamed sentence by sentence into text-to-speech, the playout paced on
// the controller's clock (by the Manager's shared pacers, package pace:
// one goroutine per processor plays every call's frames, each call on its
// own 20 ms schedule), the commit of what the caller heard, and the
// turn's metrics). The heard transcript holds user text once final and
// agent text only as far as the playout clock proves it played. While a
// server tool of the turn runs past the agent's voice.fillerAfter, its
// filler phrase is said through the same playout (committed only if it
// played); barge-in and the call's end cancel the turn and its tool, and
// the turn's metrics list each tool call with its duration.
//
// Voice activity detection tells each 20 ms frame of the caller as speech
// or not, by the agent's voice.vad: the energy detector (a margin over the
// line's adaptive noise floor) or the Silero VAD model (package silero,
// run in Go: it hears speech, not loudness, so noise neither starts nor
// holds an utterance); both feed the same bookkeeping of utterances, their
// onset and their audio.
//
// Speech-to-text is a Transcriber per agent (ProviderSpeech, by its
// voice.sttMode): ProviderSTT sends each utterance over HTTP; RealtimeSTT
// (an OpenAI Realtime transcription session) and DeepgramSTT (a
// Deepgram-compatible live listen) are StreamingTranscribers whose streams
// carry the caller's audio while they speak and answer interim and final
// transcripts; they also Transcribe a whole utterance over one stream.
//
// A turn is answered as early as it safely can be. Endpointing reads the
// words so far (a speculative HTTP transcription after 120 ms of silence,
// or a live stream's interims): a question ends the turn after the agent's
// voice.minEndpointDelay, a closed clause after 250 ms, an opener ("Hi, this
// is Ana.") after 600 ms, a trailing word ("and", "um", a comma) or a number
// being dictated waits up to voice.maxEndpointDelay, and nothing known the
// VAD's delay (the rules in endpoint.go; voice.endpointing.mode, which
// Studio may override per agent with the other turn-taking settings: a
// call takes them as it opens). A speculation the caller talks past is
// cancelled. The answer
// may start before the endpoint (preemptive generation) once the words so
// far read complete, as early as the agent's usual time to its first
// playable audio makes it ready by the endpoint, but it is held, no audio
// and no tool, until the turn is confirmed with the same words; otherwise it
// is abandoned and nothing of it is committed, saved or sent again. When
// the provider's own end-of-speech detection settled the words through the
// caller's last voiced frame (TranscriptEvent.Settled), the endpoint takes
// them without waiting for the answer to its Finalize. With
// voice.turnDetection provider, the live stream's turn signal
// (TranscriptEvent.Turn: semantic_vad on a Realtime session, the
// Deepgram-compatible turn-taking stream) comes first: the provider's end
// of turn ends the utterance at once with its words, its eager end of turn
// starts the held answer, and a resumed turn abandons it; the endpointing
// above stays as the backstop. Speech
// plays as it streams (StreamingSynthesizer), the next sentence is
// synthesised while one plays, and a talkspurt starts on its own 20 ms
// grid the moment its first audio is playable.
//
// Each part of a call may be a chain of engines (ProviderSpeech; the
// model's in the agent package): a part moves to the next engine on a
// failure, a first-byte timeout (voice.firstByteTimeout) or a silence
// between two pieces of its stream (voice.chunkTimeout). A voice that
// fails in the middle of a sentence hands the next voice what the caller
// has not heard, as far as the box knows it: the box knows what played
// only by the unit it synthesises, the sentence (a stream has no word
// timings), so the next voice says that sentence from its start, the
// sentences before it, played through, are never said again, and the
// heard transcript holds the sentence once. The caller hears at most the
// played start of that one sentence twice.
//
// The limits of a call live here and nowhere else: the maximum length
// (Config.MaxDuration, or CallInfo.MaxDuration) and the media timeout
// (CallInfo.MediaTimeout). How many calls a
// transport carries at once is the transport's own limit.
//
// Time is a dependency (Config.Clock): tests drive whole calls on a mock
// clock, so barge-in, endpointing and timeouts replay deterministically.
package voice
