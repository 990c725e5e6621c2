// Package deliver connects images to their organizations' storage
// destinations: the check of storage_destination_id when an image is
// created, and the bucket an image's files are written to (storedest for
// the destination and its secret, storage for the connection). It
// implements images.Destinations.
package deliver
