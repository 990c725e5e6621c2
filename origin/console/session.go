package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// A session is stored under the SHA-256 of its id, never the id itself: a
// copy of the store holds no usable cookie. An index by the end of its
// lifetime (console/e/<end, 16 hex digits of Unix nanoseconds>/<hash>)
// lets sign-ins remove sessions nobody presents again.
const (
	sessionPrefix = "console/s/"
	endPrefix     = "console/e/"
)

// session is a signed-in person's record: the key that signed in, when,
// when it was last used, and the token its forms carry (CSRF).
type session struct {
	KeyID   string    `json:"key_id"`
	OrgID   string    `json:"org_id"`
	Created time.Time `json:"created"`
	Seen    time.Time `json:"seen"`
	CSRF    string    `json:"csrf"`

	id string // the cookie's value; not stored
}

// newToken returns 32 random bytes, URL-safe base64.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func sessionKey(id string) []byte { return []byte(sessionPrefix + sessionHash(id)) }

// endKey is the session's entry in the index by end of lifetime.
func (s *sessions) endKey(se *session) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", endPrefix, se.Created.Add(s.lifetime).UnixNano(), sessionHash(se.id))
}

// sweepMax bounds the sessions one sign-in removes.
const sweepMax = 100

// sessions keeps session records in a kv.Store, so that every origin on
// a shared store knows them.
type sessions struct {
	store    kv.Store
	now      func() time.Time
	idle     time.Duration
	lifetime time.Duration
	touch    time.Duration // Seen is written again once it is this old
}

// errNoSession reports a missing, expired or malformed session.
var errNoSession = errors.New("console: no session")

// create opens a session, after removing up to sweepMax sessions whose
// lifetime ended (their records are otherwise only removed when their
// cookie comes back).
func (s *sessions) create(ctx context.Context, keyID, orgID string) (*session, error) {
	now := s.now().UTC()
	if err := s.sweep(ctx, now); err != nil {
		return nil, err
	}
	se := &session{KeyID: keyID, OrgID: orgID, Created: now, Seen: now, CSRF: newToken(), id: newToken()}
	if err := s.store.Put(s.endKey(se), nil); err != nil {
		return nil, fmt.Errorf("console: index session: %w", err)
	}
	return se, s.put(se)
}

// sweep removes up to sweepMax sessions whose lifetime ended before now.
func (s *sessions) sweep(ctx context.Context, now time.Time) error {
	it := s.store.Iterate(ctx, []byte(endPrefix), kv.IterOptions{})
	var done [][]byte
	for len(done) < sweepMax && it.Next() {
		k := it.Key()
		end, hash, ok := strings.Cut(string(k[len(endPrefix):]), "/")
		if n, err := strconv.ParseInt(end, 16, 64); ok && err == nil && n >= now.UnixNano() {
			break
		}
		done = append(done, bytes.Clone(k), []byte(sessionPrefix+hash))
	}
	err := it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("console: sweep sessions: %w", err)
	}
	if len(done) == 0 {
		return nil
	}
	b := s.store.NewBatch()
	defer b.Close()
	for _, k := range done {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return b.Commit()
}

func (s *sessions) put(se *session) error {
	raw, err := json.Marshal(se)
	if err != nil {
		return err
	}
	if err := s.store.Put(sessionKey(se.id), raw); err != nil {
		return fmt.Errorf("console: save session: %w", err)
	}
	return nil
}

// load returns the live session with the id, refreshing its last use;
// errNoSession when there is none or it has expired (idle or lifetime),
// in which case the record is removed.
func (s *sessions) load(ctx context.Context, id string) (*session, error) {
	if len(id) != 43 { // 32 bytes, unpadded base64
		return nil, errNoSession
	}
	raw, err := s.store.Get(ctx, sessionKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("console: read session: %w", err)
	}
	se := &session{id: id}
	if err := json.Unmarshal(raw, se); err != nil {
		return nil, errNoSession
	}
	now := s.now().UTC()
	if now.Sub(se.Seen) > s.idle || now.Sub(se.Created) > s.lifetime {
		s.end(se)
		return nil, errNoSession
	}
	if now.Sub(se.Seen) >= s.touch {
		se.Seen = now
		if err := s.put(se); err != nil {
			return nil, err
		}
	}
	return se, nil
}

// end removes the session and its index entry.
func (s *sessions) end(se *session) error {
	b := s.store.NewBatch()
	defer b.Close()
	if err := b.Delete(sessionKey(se.id)); err != nil {
		return err
	}
	if err := b.Delete(s.endKey(se)); err != nil {
		return err
	}
	return b.Commit()
}

// checkCSRF reports whether token is the session's form token.
func (se *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(se.CSRF)) == 1
}
