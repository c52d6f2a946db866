// Package wire is the codec of DRV/2, drover's ZeroMQ protocol (specified in
// docs/PROTOCOL.md): a Go type for every command, Encode to turn one into the
// frames a DEALER sends, and Decode to turn received frames back into a
// Message after validating all of it (frame count and sizes, UTF-8, known
// command, enum ranges, limits). It opens no socket; package net/zsock does.
//
// A message is, as the DEALER sends it (a ROUTER sees a routing-id frame
// before it, which the transport strips before calling Decode):
//
//	frame 0  "DRV2"            protocol and version, 4 bytes
//	frame 1  command name      e.g. "SUBMIT"
//	frame 2  request id        8 bytes, big-endian
//	frame 3  body              binary (or JSON for admin commands); absent
//	                           for commands without a body
//
// Decode reports every problem as a *Error carrying the DRV error code a
// server answers with (400 malformed, 413 too large, 501 unknown command,
// 505 version not supported), the request id when it could be read, and a
// message naming what was wrong and what was expected. *Error is itself the
// Message of the ERROR command, so a server can send it back as is.
//
// Decoding allocates per message, not per field: all the strings of one
// message share one allocation (a key batch's alias the body frame),
// records share one slice per kind, and byte fields (payloads, outputs)
// alias the body frame. See Decode.
package wire
