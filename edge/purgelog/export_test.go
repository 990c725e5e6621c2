package purgelog

import "time"

// SetAfter replaces the subscriber's time.After, through which Run waits
// before reconnecting, for tests that check the backoff without waiting
// it out. Call it before Run.
func (s *Subscriber) SetAfter(after func(time.Duration) <-chan time.Time) { s.after = after }
