// Package client is the Go client of a Throng server, for bots, load tests
// and tools: [Dial] connects over QUIC, [DialWebSocket] over a WebSocket,
// and both return a [Client] that has completed the Hello/Welcome
// handshake. [Client.SendMove] sends movement within the server's rate
// limits, [Client.SendCommand] the game's own commands, [Client.Poll]
// hands over what arrived (decoded into a wire.Frame), and [Client.Stats]
// counts it. A refusal is a [*RefusedError], a server's disconnect a
// [*DisconnectedError].
package client
