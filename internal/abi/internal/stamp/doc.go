// Package stamp computes the hashes written into the header of package abi's
// generated files. The generator writes them; abi's tests recompute them, so
// a generated file that is stale (its sources changed) or edited by hand
// fails `go test` without needing a C compiler.
package stamp
