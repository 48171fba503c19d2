// Package components holds the plain data types Throng keeps in its Ark
// world: [Transform], [MoveInput], [Animation], [InChunk], [Chunk], [Client],
// [Prop] and [ActorID]. They carry no logic; systems give them meaning.
//
// It imports nothing of Throng's and only Ark's RelationMarker from Ark, so
// that user systems can query these components with Ark's generic filters.
package components
