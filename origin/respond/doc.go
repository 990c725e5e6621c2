// Package respond writes successful API responses: JSON bodies with their
// length, and empty 202/204 answers. Errors go through package apierr.
package respond
