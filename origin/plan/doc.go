// Package plan holds the plans of the operator contract: image credits per
// billing period, template allowance, the max_wait_ms cap, feature gates and
// dedupe rules. Plans are code, not data: changing one is a release.
package plan
