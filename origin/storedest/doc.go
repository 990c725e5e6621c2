// Package storedest manages storage destinations (/v1/storage-destinations):
// the S3-compatible buckets of an organization that rendered files are also
// written to (spec §2.2 storage_destination_id, §2.6; compat.md "Storage
// destinations"). It validates requests, runs the connection test through
// origin/storage when the connection changes, keeps the records with their
// secret access keys sealed, lists them with cursors, answers the
// organization's AWS external id, and gives the render path Store.Get and
// Store.Connection.
//
// Details: docs/internals.md, "origin/storedest".
package storedest
