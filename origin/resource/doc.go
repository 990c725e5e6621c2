// Package resource holds what every per-organization management resource
// (proxies, storage destinations, OG configurations, API keys, templates)
// shares: path ids, the not-found answer, cursor lists, the JSON/form field
// reader, and Store, a generic store of records under one lock per
// organization. A resource keeps only its fields, validation and routes.
package resource
