// Package websocket is the transport for browsers, and for any client that
// cannot use QUIC: a [Transport] that serves Throng's wire protocol (package
// wire) over WebSockets, one binary message a frame, on a connection that
// asks for the [Subprotocol].
//
// Serve with [Listen] (which can serve the game's pages beside the socket,
// [Config.Pages]), or mount [New]'s [Transport], an http.Handler, on a
// server of your own. Connect Go clients with package client's
// DialWebSocket; a browser uses the JavaScript client the crowd example
// ships.
package websocket
