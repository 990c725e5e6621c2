// Package perm names the permissions an API key can hold and answers the one
// question authorization asks: does a grant cover a set of permissions?
package perm
