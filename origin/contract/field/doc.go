// Package field reads request bodies — JSON objects or forms — into typed
// values, and collects every invalid field with its path so a handler can
// answer one 400 that names them all.
package field
