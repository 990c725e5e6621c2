package origin

import "github.com/pictorhq/pictor/origin/rendition"

// Images exposes the image service to the tests of package origin_test
// (forcing a master's compaction, for one).
func (o *Origin) Images() *rendition.Service { return o.images }

// InFlight returns how many requests the origin is handling.
func (o *Origin) InFlight() int { return o.router.InFlight() }
