// Package rooms carries browser test calls: POST /api/voice/rooms opens a
// room with the agent in it, the browser joins, and the same call
// controller as phone calls (package voice) runs the conversation, so
// everything of the call lifecycle holds as on SIP: the memory snapshot and
// the recall before the first word, the heard transcript from the playout
// clock, one completion with one save when the room closes (the browser
// left, the operator ended it, a timeout), per-turn metrics, and the call
// in GET /api/voice/calls/{id}.
//
// Two backends sit behind one interface, chosen by configuration:
//
//   - LiveKit (rooms.livekit.url set): the box creates the room and mints
//     the browser's token with the LiveKit server SDK, and joins as the
//     agent participant (pion), subscribing to the caller's audio and
//     publishing its own, Opus both ways. A LiveKit cluster carries the
//     media, which is how browser calls scale out. Opus is cgo over
//     libopus (package rooms/opus, build tag libopus).
//   - Embedded (nothing configured): the box itself is the browser's
//     WebRTC peer, signalled over HTTP with one SDP offer and answer
//     (POST /api/voice/rooms/{id}/offer), audio in G.711 µ-law, which
//     browsers offer and which needs no cgo, so `stackbone dev` offers
//     browser calls on a fresh machine. ICE gathers host candidates on
//     every interface that is up, since a browser as it ships offers no
//     loopback candidates and meets the box on the machine's own address;
//     rooms.embedded narrows that (interfaces, ips), advertises a public
//     address for a box behind a one-to-one NAT (publicIPs) and puts every
//     room on one UDP port (udpPort). The browser's mDNS host names are
//     resolved. The peer is built from pion's ICE, DTLS and SRTP packages,
//     not a PeerConnection: one goroutine per call reads the connection
//     and hands DTLS to the handshake; once the call is keyed, the socket's
//     own reader (the ICE agent's, or the shared port's) decrypts the
//     caller's RTP where it reads it (srtpconn.Net taps); and the playout
//     encrypts and sends each packet itself (a PeerConnection passes each
//     packet through three more goroutines and its interceptors, as much
//     CPU per call as the rest of the box).
//
// Like package sip, this package translates audio and reports, nothing
// more: the browser's decoded audio goes to voice.Call.Hear, the browser
// leaving is reported as a caller hang-up (voice.Call.End), and the
// controller decides the outcome and hangs up through the room. How many
// rooms are open at once is this package's own limit (rooms.maxRooms).
//
// Browser calls select the person only by the explicit identities of the
// request: never the operator's key, a session id, or a phone-shaped
// customerId standing in for phoneNumber. Without the identity the agent's
// key names, the call runs without memory and its record says why.
//
// GET /call serves the call page: pick an agent, enter identities, start
// and end a call, see the heard transcript live.
//
//	svc, err := rooms.New(rooms.Config{Manager: calls, Rooms: cfg.Rooms, Logger: log})
//	if err != nil { ... }           // LiveKit configured in a build without -tags libopus
//	svc.Register(apiServer)          // /api/voice/rooms..., GET /call
//	defer svc.Close()                // ends rooms (outcome shutdown), waits for their saves
package rooms
