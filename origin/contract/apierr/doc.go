// Package apierr is the one error type of Pictor's HTTP boundary. An *Error
// carries the status, the public message and field-level validation errors;
// Write renders it as the standard body {"error","message","statusCode"}
// and logs the private cause, which never reaches the client.
package apierr
