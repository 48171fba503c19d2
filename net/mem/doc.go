// Package mem is the in-process transport: sessions without sockets,
// goroutines or timing, for unit tests, benchmarks and bots that share the
// server's process. [New] makes a [Transport]; [Transport.Dial] opens a
// session and returns its [Client], which sends frames to the server and
// collects what the server sent it, to drain when the test wants.
// [Options.CountOnly] keeps only counts, for long benchmarks.
package mem
