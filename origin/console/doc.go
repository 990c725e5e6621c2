// Package console is the web console at /console: a person signs in with
// an API key and acts through the REST routes, run in-process as that key
// (api.WithCaller), so the console has the API's rules and nothing more.
// Sessions live in the store; pages are server-rendered (html/template).
package console
