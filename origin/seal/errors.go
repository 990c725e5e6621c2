package seal

import (
	"errors"
	"fmt"
)

var (
	// ErrOpen is returned when a sealed value does not decrypt: sealed
	// under a master key the box does not hold, or tampered data.
	ErrOpen = errors.New("seal: cannot open sealed value")
	// ErrUnknownKey is returned (as an *UnknownKeyError, which is also
	// ErrOpen) for a value that names a master key the box does not hold.
	ErrUnknownKey = errors.New("seal: sealed under a master key this process does not hold")
	// ErrKeyIDClash is returned by New for two master keys with the same
	// key id (one pair in 2^32): replace one.
	ErrKeyIDClash = errors.New("seal: two master keys share a key id; generate another key")
)

// UnknownKeyError is the error of a value sealed under a master key the
// box does not hold: a process started without the key that sealed it, as
// when one origin of several still runs on the old master key alone. It
// is ErrOpen and ErrUnknownKey, and is marked Unavailable (see
// origin/contract/apierr): the API answers 503, for another origin, or a
// later try, may hold the key.
type UnknownKeyError struct {
	// ID is the key id the value names (Box.KeyID of the box that sealed it).
	ID string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("%v (key id %s): give this process that key as PICTOR_MASTER_KEY, or as a previous key (PICTOR_MASTER_KEY_PREVIOUS, %s)", ErrUnknownKey, e.ID, PreviousKeyFile)
}

// Is makes the error both ErrUnknownKey and ErrOpen.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey || target == ErrOpen }

// Unavailable marks the error as one another try, or another process, may
// not have.
func (e *UnknownKeyError) Unavailable() bool { return true }
