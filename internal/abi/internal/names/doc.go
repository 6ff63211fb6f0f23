// Package names turns kernel UAPI C identifiers into the Go identifiers used
// by package abi. The generator names every struct and field with it, and the
// layout test derives the Go name of every C name it checks with it, so a
// struct or field can only be checked under the name the generator gave it.
package names
