// Command pictor runs Pictor's tiers and operator commands. It only parses
// flags and wires components; see the edge and origin packages.
package main
