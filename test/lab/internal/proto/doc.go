// Package proto is the one definition of the lab's control protocol: the
// frames that travel between the host (package lab) and each guest's /init
// (guestinit) over the virtio-serial port "lab.ctl", and between a program in
// the primary guest (package peer) and its /init over a Unix socket.
//
// A frame is a type byte, a big-endian uint32 channel, a big-endian uint32
// body length and the body. Channel 0 is the guest's own run: the request
// with the command, its output and exit status. In the two-guest lab every
// request that the primary guest sends for its peer gets a channel of its
// own (1, 2, ...), chosen by the primary guest's /init; the host relays
// channels other than 0 between the two guests unchanged and answers power
// off requests itself. Every request on a channel ends with one Exit frame on
// it.
//
// This package imports only the standard library: the lab embeds its source
// and builds it together with guestinit, in a module of their own.
package proto
