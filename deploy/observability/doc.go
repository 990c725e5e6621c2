// Package observability holds Pictor's monitoring as files to deploy: a
// Grafana dashboard (grafana/pictor.json), Prometheus alert rules and a
// scrape example (prometheus/). Its tests parse the rules and every PromQL
// expression with Prometheus's own parsers, and check against a running
// `pictor serve` that each metric they name is one Pictor exports. It has
// no code outside its tests.
package observability
