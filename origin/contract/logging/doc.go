// Package logging sets up Pictor's structured logs: JSON lines through
// log/slog, with the request id carried in the context added to every record
// logged with a ...Context call.
package logging
