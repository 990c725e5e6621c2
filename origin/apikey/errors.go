package apikey

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("API key not found")
	ErrLimit    = fmt.Errorf("an organization holds at most %d API keys, disabled keys included", MaxPerOrg)
)
