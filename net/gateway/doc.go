// Package gateway keeps a client's one connection while the zone server
// that holds its actor lives behind it, over NATS.
//
// A [Gateway] accepts clients on a transport of its own (QUIC, WebSocket
// or in-memory) and carries each session's frames to a zone server, and
// the zone server's frames back to the client. A zone server serves the
// gateway's sessions through a [Transport], as it would serve clients of
// its own: it sees SessionOpened, the client's frames and SessionClosed,
// and sends datagrams and reliable frames to the session. So the
// connection, its handshake and its sequence numbers stay with the
// gateway, which is what lets a later hand-off move the session from one
// zone server to another without the client reconnecting (see
// docs/zones.md).
//
// Traffic travels in rounds: the gateway forwards, each step, everything
// its clients sent since the last one, as one NATS message per zone
// server (or a heartbeat when it sent a zone nothing for a while); a zone
// server sends, at the end of each tick
// ([Transport.Flush]), everything it sent to the gateway's sessions, as
// one message per gateway and one per relay lane (or a heartbeat when it
// sent nothing for a while): the relay's units send through lanes, one
// per unit running at once ([Transport.SendUnreliableBatchLane]), so that
// units on several cores never wait on one lock; a session it moves to another zone server goes at once
// ([Transport.Move]), and the gateway forwards it to the new zone server
// as it hears of it, ahead of its clients' later frames. A zone server
// about to move a session opens it at the new zone server first
// ([Transport.Shadow]): the gateway sends that server the client's frames
// too, and holds what it sends the client, until the move, which then
// only switches the session's route. A round past the
// NATS server's largest payload goes as several messages of whole
// entries. A message holds entries: a kind, the session (the gateway's id
// for it) and a payload (a frame, a datagram or a reason). A zone
// server's movement batches go by reference: each record once per
// message, a batch as its header and indices into the message's records,
// which the gateway puts back together byte for byte for the client. A
// message that does not decode is dropped whole and counted;
// the server ticks on. A gateway that hears nothing from a zone server for
// [Config].ZoneTimeout takes it for dead and disconnects its sessions; a
// zone server's transport that hears nothing from a gateway for
// [TransportConfig].GatewayTimeout closes that gateway's sessions
// ([GatewayGone]), so that the server lets their actors go.
package gateway
