// Package resource holds what every per-organization management resource
// (proxies, storage destinations, OG configurations, API keys, templates)
// shares: path ids, the not-found answer, cursor lists, the JSON/form field
// reader, Routes (the kit's handlers: a request admitted, the resource's
// work run, its record answered or its errors mapped), the answers'
// timestamps (Stamps), the resolver of the address check a save runs
// (NoLookup), and Store, a generic store of records under one lock per
// organization. A resource keeps only its fields, validation and routes.
package resource
