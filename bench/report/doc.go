// Package report writes the outcome of a benchmark run: a Markdown report
// (results, comparisons with the baselines, CPU cost, targets, notes and
// errors) and an SVG chart of the latencies. It renders what it is given
// and judges nothing itself.
package report
