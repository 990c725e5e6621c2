// Package origins is the edge's pool of origins. It health-checks each one,
// takes one out after failed checks or at once when a request cannot reach
// it, and gives each request its order of origins to try: the healthy ones
// round-robin, then the others. Do sends a request along that order and
// fails over to the next origin when the failure allows it.
package origins
