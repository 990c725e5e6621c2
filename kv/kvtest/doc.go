// Package kvtest is the conformance suite every kv.Store implementation must
// pass: Run opens a fresh store per case and checks the behaviour the origin
// relies on (ordering of binary keys, After and Reverse, atomic batches,
// snapshot isolation, iterator rules, ErrNotFound and ErrClosed, concurrent
// writers, large values, many keys, and Update: commit, all or nothing,
// reads of its own writes, exclusion under a lock name, also across two
// handles of one store when SecondHandle can open them). Each backend's
// tests call Run once.
// Fault injection (crashes, refused writes, outages) needs the backend's own
// machinery and stays in the backend's tests.
package kvtest
