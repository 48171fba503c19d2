// Package spectator is the server's window for operators and for people
// evaluating Throng: a page that shows the whole world as the server sees
// it (chunks, clusters and work units, actors by kind, each chunk's relay
// cost, a watched player's interest rings and what it was sent, owed or
// held back this tick, live charts of the tick) and a WebSocket that
// streams it, downsampled to a few frames a second.
//
// The spectator is not a player: it enters no one's interest and sends
// the world nothing but its controls (watch a player, pause, step). The
// server builds a frame at a tick boundary only while a spectator is
// connected and one is due ([Hub.Due]); writing it to the sockets happens
// on their own goroutines, and a spectator that cannot keep up skips
// frames rather than slowing the tick.
//
// It imports systems (for [systems.Spectacle]); the root package wires it
// to a server's "debug" settings.
package spectator
