// Package layout holds no code: its test keeps the tree's layout rule,
// that imports between top-level folders point one way (docs/architecture.md
// draws the graph).
package layout
