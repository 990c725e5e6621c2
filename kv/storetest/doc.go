// Package storetest opens stores as origins share them, for the tests of
// packages that must be exact across origins: n handles of one fresh store,
// on each backend. It is not the conformance suite (kv/kvtest), which every
// store implementation passes.
package storetest
