package org

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/plan"
)

// Org is an organization.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Suspended bool      `json:"suspended"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Plan returns the organization's plan.
func (o *Org) PlanInfo() plan.Plan {
	p, _ := plan.Lookup(o.Plan)
	return p
}

// Store keeps organizations in a kv.Store.
type Store struct {
	kv  kv.Store
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: s, now: now}
}

func key(id string) []byte { return []byte("org/" + id) }

// Create adds an organization on the named plan.
func (s *Store) Create(name, planName string) (*Org, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 255 {
		return nil, ErrInvalidName
	}
	if _, ok := plan.Lookup(planName); !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPlan, planName, strings.Join(plan.Names(), ", "))
	}
	now := s.now().UTC()
	o := &Org{ID: uuid.Must(uuid.NewV7()).String(), Name: name, Plan: planName, CreatedAt: now, UpdatedAt: now}
	return o, s.put(o)
}

// Get returns the organization with the id.
func (s *Store) Get(ctx context.Context, id string) (*Org, error) { return get(ctx, s.kv, id) }

func get(ctx context.Context, r kv.Reader, id string) (*Org, error) {
	raw, err := r.Get(ctx, key(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get organization %s: %w", id, err)
	}
	var o Org
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("decode organization %s: %w", id, err)
	}
	return &o, nil
}

// SetSuspended suspends or resumes an organization.
func (s *Store) SetSuspended(ctx context.Context, id string, suspended bool) (*Org, error) {
	return s.modify(ctx, id, func(o *Org) error {
		o.Suspended = suspended
		return nil
	})
}

// SetPlan moves an organization to the named plan.
func (s *Store) SetPlan(ctx context.Context, id, planName string) (*Org, error) {
	if _, ok := plan.Lookup(planName); !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPlan, planName, strings.Join(plan.Names(), ", "))
	}
	return s.modify(ctx, id, func(o *Org) error {
		o.Plan = planName
		return nil
	})
}

// modify changes an organization in one transaction under its lock, so
// that two changes of it (a suspension and a plan change) never undo
// each other.
func (s *Store) modify(ctx context.Context, id string, change func(*Org) error) (*Org, error) {
	var out *Org
	ctx = context.WithoutCancel(ctx) // a change, once started, is made
	err := s.kv.Update(ctx, "org/"+id, func(txn kv.Txn) error {
		o, err := get(ctx, txn, id)
		if err != nil {
			return err
		}
		if err := change(o); err != nil {
			return err
		}
		o.UpdatedAt = s.now().UTC()
		raw, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if err := txn.Put(key(o.ID), raw); err != nil {
			return fmt.Errorf("store organization %s: %w", o.ID, err)
		}
		out = o
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// List returns every organization in creation order.
func (s *Store) List(ctx context.Context) ([]*Org, error) {
	it := s.kv.Iterate(ctx, []byte("org/"), kv.IterOptions{})
	defer it.Close()
	var out []*Org
	for it.Next() {
		var o Org
		if err := json.Unmarshal(it.Value(), &o); err != nil {
			return nil, fmt.Errorf("decode organization %s: %w", it.Key(), err)
		}
		out = append(out, &o)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	return out, nil
}

// Any reports whether at least one organization exists.
func (s *Store) Any(ctx context.Context) (bool, error) {
	it := s.kv.Iterate(ctx, []byte("org/"), kv.IterOptions{})
	defer it.Close()
	found := it.Next()
	return found, it.Err()
}

func (s *Store) put(o *Org) error {
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := s.kv.Put(key(o.ID), raw); err != nil {
		return fmt.Errorf("store organization %s: %w", o.ID, err)
	}
	return nil
}
