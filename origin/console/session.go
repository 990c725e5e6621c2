package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// A session is stored under the SHA-256 of its id, never the id itself: a
// copy of the store holds no usable cookie.
const sessionPrefix = "console/s/"

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

func sessionKey(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return []byte(sessionPrefix + hex.EncodeToString(sum[:]))
}

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

func (s *sessions) create(keyID, orgID string) (*session, error) {
	now := s.now().UTC()
	se := &session{KeyID: keyID, OrgID: orgID, Created: now, Seen: now, CSRF: newToken(), id: newToken()}
	return se, s.put(se)
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
		s.end(id)
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

// end removes the session with the id.
func (s *sessions) end(id string) error { return s.store.Delete(sessionKey(id)) }

// checkCSRF reports whether token is the session's form token.
func (se *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(se.CSRF)) == 1
}
