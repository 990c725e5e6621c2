package pgkv

import (
	"bytes"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/pictorhq/pictor/kv"
)

// batch collects writes in memory; Commit sends them in one transaction.
type batch struct {
	s    *Store
	ops  []write
	done bool
}

type write struct {
	del  bool
	k, v []byte
}

var _ kv.Batch = (*batch)(nil)

func (b *batch) Put(key, value []byte) error {
	b.ops = append(b.ops, write{k: nonNil(bytes.Clone(key)), v: nonNil(bytes.Clone(value))})
	return nil
}

func (b *batch) Delete(key []byte) error {
	b.ops = append(b.ops, write{del: true, k: nonNil(bytes.Clone(key))})
	return nil
}

// Commit applies the writes atomically: BEGIN, the writes pipelined in one
// round trip, COMMIT. It returns once the commit is flushed to the server's
// disk. A failure before COMMIT leaves nothing behind.
func (b *batch) Commit() error {
	if b.done {
		return errors.New("pgkv: batch already committed or closed")
	}
	if b.s.closed.Load() {
		return b.s.closedErr("commit")
	}
	if len(b.ops) == 0 {
		b.done = true
		return nil
	}
	err := b.s.do(context.Background(), "commit", false, func(ctx context.Context, c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return notAppliedError{err}
		}
		var pb pgx.Batch
		for _, w := range b.ops {
			if w.del {
				pb.Queue(sqlDelete, w.k)
			} else {
				pb.Queue(sqlPut, w.k, w.v)
			}
		}
		if err := tx.SendBatch(ctx, &pb).Close(); err != nil {
			tx.Rollback(ctx)
			return notAppliedError{err}
		}
		return tx.Commit(ctx)
	})
	if err == nil {
		b.done, b.ops = true, nil
	}
	return err
}

// Close drops the writes; after Commit it does nothing.
func (b *batch) Close() error {
	b.done, b.ops = true, nil
	return nil
}
