// Package grid is Throng's chunk math: which chunk a position is in, chunk
// identity, distance, visibility, and the cluster partition that tells which
// chunks may be processed independently within a tick.
//
// It is a leaf: it imports nothing of Throng's and knows nothing of the ECS,
// so every other package may use it.
//
// # Outline
//
//   - [AreaKey] names one chunk: a worldOrCell and integer chunk coordinates.
//     It is comparable and used as a map key.
//   - [ChunkCoord] and [KeyOf] map positions to chunks, flooring negative
//     positions and saturating at the int32 range.
//   - [Chebyshev], [Visible] and [Stencil] are distance and the 3x3
//     visibility rule; different worldOrCells are [Unreachable].
//   - [Less] is the chunk order everything deterministic is sorted by.
//   - [Partitioner] groups occupied chunks into [Cluster] values, connected
//     components under "same worldOrCell and Chebyshev distance <= S", with S
//     at least [MinSeparation] so that clusters never share relay range.
//
// # Tasks
//
// Place an actor:
//   - Chunk of a position: [KeyOf], or [ChunkCoord] for one axis.
//   - Chunk size when none is configured: [DefaultChunkSize].
//
// Decide who sees whom:
//   - Does a recipient in chunk a see a sender in chunk b: [Visible].
//   - The chunks to visit for a recipient: [Stencil] (centre at index 4).
//   - How far apart two chunks are: [Chebyshev].
//
// Split the tick's work:
//   - Group the occupied chunk views into clusters: [Partitioner.Partition].
//   - Order clusters and chunks reproducibly: [Cluster.Lowest], [Less].
//   - The smallest separation that keeps clusters independent: [MinSeparation].
package grid
