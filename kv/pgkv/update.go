package pgkv

import (
	"context"
	"errors"

	"github.com/pictorhq/pictor/kv"
)

// Update implements kv.Store. (Placeholder: being implemented.)
func (s *Store) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	return errors.New("pgkv: Update not implemented yet")
}
