// Package version tells which version of the module a program was built
// from, for the programs' -version flag: the version and commit that make
// stamps into a release build with the linker's -X (make dist), or else
// what the Go toolchain recorded in the binary's build information (the
// module version of `go install ...@v0.1.0`, the VCS revision of a build
// with -buildvcs).
package version
