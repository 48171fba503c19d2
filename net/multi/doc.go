// Package multi serves one world over several transports at once: native
// clients over QUIC and browsers over WebSockets, say. [New] takes the
// transports and returns one [Transport] that the server talks to.
package multi
