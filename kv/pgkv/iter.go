package pgkv

import (
	"bytes"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pictorhq/pictor/kv"
)

// pageBytes caps the keys and values one page holds: a page of large
// values ends early and the next one asks for fewer rows.
const pageBytes = 4 << 20

// firstPage is the size of an iteration's first page; pages then double up
// to Options.PageSize, so that listing a few records reads a few rows.
const firstPage = 32

// querier is a connection, pooled or held by a snapshot or an Update.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func get(ctx context.Context, q querier, key []byte) ([]byte, error) {
	var v []byte
	err := q.QueryRow(ctx, sqlGet, nonNil(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

type row struct{ k, v []byte }

// readPage runs one scan. truncated reports that it stopped before the
// statement's LIMIT because the page reached pageBytes.
func readPage(ctx context.Context, q querier, sql string, args []any) (page []row, truncated bool, err error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.k, &r.v); err != nil {
			return nil, false, err
		}
		page = append(page, r)
		if size += len(r.k) + len(r.v); size >= pageBytes {
			truncated = true
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return page, truncated, nil
}

// fetchFunc runs one scan for an iterator.
type fetchFunc func(sql string, args []any) (page []row, truncated bool, err error)

// iter walks a key range page by page with keyset pagination: each page
// starts where the previous one ended, so no cursor or connection is held
// between pages and at most one page sits in memory.
type iter struct {
	ctx     context.Context
	fetch   fetchFunc
	lo      []byte // inclusive
	hi      []byte // exclusive; nil when unbounded
	reverse bool
	limit   int
	max     int

	page []row
	pos  int
	more bool
	cur  row
	err  error
}

func newIter(ctx context.Context, prefix []byte, opts kv.IterOptions, pageSize int, fetch fetchFunc) *iter {
	lo := nonNil(bytes.Clone(prefix))
	hi := kv.PrefixEnd(prefix)
	if opts.After != nil {
		if opts.Reverse {
			if hi == nil || bytes.Compare(opts.After, hi) < 0 {
				hi = bytes.Clone(opts.After)
			}
		} else if next := append(bytes.Clone(opts.After), 0); bytes.Compare(next, lo) > 0 {
			// next is the smallest key strictly greater than After.
			lo = next
		}
	}
	it := &iter{ctx: ctx, fetch: fetch, lo: lo, hi: hi, reverse: opts.Reverse, limit: min(firstPage, pageSize), max: pageSize, more: true}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		it.more = false
	}
	return it
}

// Next steps the walk; once the walk's ctx is done it stops, and Err
// returns ctx's error.
func (it *iter) Next() bool {
	if it.err != nil {
		return false
	}
	if err := it.ctx.Err(); err != nil {
		it.err = err
		it.page, it.pos, it.cur = nil, 0, row{}
		return false
	}
	if it.pos == len(it.page) {
		if !it.more || !it.nextPage() {
			it.page, it.pos, it.cur = nil, 0, row{}
			return false
		}
	}
	it.cur = it.page[it.pos]
	it.page[it.pos] = row{}
	it.pos++
	return true
}

func (it *iter) nextPage() bool {
	var sql string
	var args []any
	switch {
	case !it.reverse && it.hi == nil:
		sql, args = sqlScan, []any{it.lo, it.limit}
	case !it.reverse:
		sql, args = sqlScanTo, []any{it.lo, it.hi, it.limit}
	case it.hi == nil:
		sql, args = sqlRScan, []any{it.lo, it.limit}
	default:
		sql, args = sqlRScanTo, []any{it.lo, it.hi, it.limit}
	}
	page, truncated, err := it.fetch(sql, args)
	if err != nil {
		it.err = err
		return false
	}
	it.page, it.pos = page, 0
	it.more = truncated || len(page) == it.limit
	if len(page) == 0 {
		return false
	}
	last := page[len(page)-1].k
	if it.reverse {
		it.hi = bytes.Clone(last)
	} else {
		it.lo = append(bytes.Clone(last), 0)
	}
	if truncated {
		it.limit = len(page)
	} else {
		it.limit = min(2*it.limit, it.max)
	}
	return true
}

func (it *iter) Key() []byte   { return it.cur.k }
func (it *iter) Value() []byte { return it.cur.v }
func (it *iter) Err() error    { return it.err }

// Close drops the current page; the iterator holds nothing else.
func (it *iter) Close() error {
	it.page, it.cur, it.more = nil, row{}, false
	return nil
}
