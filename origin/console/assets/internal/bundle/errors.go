package bundle

import "errors"

var (
	// ErrBuild is returned when esbuild reports an error or an entry
	// builds into other than exactly one file.
	ErrBuild = errors.New("bundle: build failed")
	// ErrStale is returned by Check when the committed files are not
	// what the sources build; its message names each file that differs.
	ErrStale = errors.New("bundle: committed assets are stale")
	// ErrConfig is returned by Config.Validate.
	ErrConfig = errors.New("bundle: invalid config")
)
