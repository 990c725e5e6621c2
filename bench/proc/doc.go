// Package proc measures a process tree from Linux's /proc: the CPU time a
// process and its descendants used (TreeCPU) and the memory they hold
// (TreeMemory, PSS and RSS summed over the tree). The harness charges a
// server under test, Chromium included, or a baseline tool with them.
// Descendants and Cmdline find a server's Chromium and the flags it runs
// with.
package proc
