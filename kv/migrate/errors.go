package migrate

import "errors"

// ErrTooNew is returned by Apply when the store was migrated by a newer
// binary than the one applying its list.
var ErrTooNew = errors.New("migrate: the store was migrated by a newer Pictor")
