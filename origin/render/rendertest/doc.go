// Package rendertest holds render engines for the tests of the packages
// that take one: a real engine that was stopped before it started, whose
// Render answers render.ErrStopped without launching a browser.
package rendertest
