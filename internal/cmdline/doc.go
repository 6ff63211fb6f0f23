// Package cmdline holds what the programs under cmd/ share in reading their
// command lines: rdma-core's and perftest's tools take the server's name
// anywhere among the flags (getopt permutes), which Go's flag package does
// not do on its own (Parse); a mistake is a *UsageError, which Status prints
// with the program's usage and turns into status 2, as those tools do; Run
// runs a program under a context that SIGINT and SIGTERM end.
package cmdline
