//go:build !unix

package edge

import "errors"

var errNoDescriptors = errors.New("no descriptor limits on this system")

func raiseOpenFileLimit() (soft, hard uint64, err error) { return 0, 0, errNoDescriptors }

func openSpare() (int, error) { return -1, errNoDescriptors }

func closeSpare(int) {}
