// Package link holds what the network transports and the Go client share
// and a game never needs: the agreed names and close codes, the shared
// defaults, the counters, and the packed queues and mailboxes that carry a
// session's frames between the tick and the goroutines that write them.
package link
