package link

import "time"

// Defaults the network transports share; each transport's package names
// them in its own Config's terms.
const (
	ReliableQueue = 4096
	StallTimeout  = 3 * time.Second
	FlushTimeout  = time.Second
	IdleTimeout   = 10 * time.Second
	InboundLimit  = 256
)
