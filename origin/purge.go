package origin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/seal"
)

// Purger is an edge that drops cached copies when told.
type Purger interface {
	PurgeImages(ctx context.Context, ids []string) error
	PurgeOrg(ctx context.Context, orgID string) error
	PurgeTag(ctx context.Context, tag string) error
}

// EdgeTokenFile holds the purge channel's tokens inside the data
// directory: one a line, each accepted (edgehub.ParseTokens).
const EdgeTokenFile = "edge.token"

// loadEdgeToken returns the configured tokens (--edge-token, separated by
// commas), or those of the data directory's EdgeTokenFile, creating it
// (0600) with one token on first use. The hub accepts an edge presenting
// any of them, so that edges move to a new token one by one: add it, move
// the edges, remove the old one.
func loadEdgeToken(configured, dataDir string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	path := filepath.Join(dataDir, EdgeTokenFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("edge token: %w", err)
	}
	b := make([]byte, 32)
	rand.Read(b)
	// Two processes starting on one data directory end up with one token.
	raw, err = seal.CreateFile(path, []byte(hex.EncodeToString(b)+"\n"))
	if err != nil {
		return "", fmt.Errorf("edge token: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// purge tells every edge to drop what an event names: the edge in this
// process directly, the others through the hub's log.
func (o *Origin) purge(ctx context.Context, kind string, ids []string) error {
	if err := o.purgeHere(ctx, contract.Event{Kind: kind, IDs: ids}); err != nil {
		return err
	}
	return o.hub.Publish(ctx, kind, ids)
}

// purgeHere applies an event to the edge in this process, if there is one:
// the events this origin publishes, and those other origins sharing the
// store published (the hub's Apply).
func (o *Origin) purgeHere(ctx context.Context, ev contract.Event) error {
	p := o.purger.Load()
	if p == nil {
		return nil
	}
	var err error
	switch ev.Kind {
	case contract.ImagesDeleted:
		err = (*p).PurgeImages(ctx, ev.IDs)
	case contract.OrgSuspended:
		for _, id := range ev.IDs {
			err = errors.Join(err, (*p).PurgeOrg(ctx, id))
		}
	case contract.KeyDisabled, contract.TagsPurged:
		for _, id := range ev.IDs {
			err = errors.Join(err, (*p).PurgeTag(ctx, id))
		}
	}
	return err
}
