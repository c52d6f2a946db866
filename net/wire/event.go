package wire

import (
	"encoding/json"
	"unicode/utf8"

	"drover/admin"
)

// The events socket (PUB) carries one admin.Event per message, in two
// frames: the topic, which is the event's Kind (e.g. "job.done", so a SUB
// can subscribe to "job." or "worker."), and the event as JSON. Events
// carry a sequence number: a subscriber that sees a gap lost events (a PUB
// drops messages for a subscriber that is too slow) and should re-query the
// admin socket.

// EncodeEvent encodes ev for the events socket.
func EncodeEvent(ev admin.Event) ([][]byte, error) {
	if err := checkTopic([]byte(ev.Kind)); err != nil {
		return nil, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, errorf(0, CodeMalformed, "event %q: %v", ev.Kind, err)
	}
	return [][]byte{[]byte(ev.Kind), body}, nil
}

// DecodeEvent decodes a message received on the events socket; errors are
// *Error with code 400 (413 for an oversized body).
func DecodeEvent(frames [][]byte) (admin.Event, error) {
	var ev admin.Event
	if len(frames) != 2 {
		return ev, errorf(0, CodeMalformed, "event: %d frames, want 2 (topic, JSON)", len(frames))
	}
	if err := checkTopic(frames[0]); err != nil {
		return ev, err
	}
	body := frames[1]
	if len(body) > MaxBody {
		return ev, errorf(0, CodeTooLarge, "event body: %d bytes, want at most %d", len(body), MaxBody)
	}
	if !utf8.Valid(body) {
		return ev, errorf(0, CodeMalformed, "event body: invalid UTF-8, want a JSON document")
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, errorf(0, CodeMalformed, "event body: bad JSON: %v", err)
	}
	if string(ev.Kind) != string(frames[0]) {
		return ev, errorf(0, CodeMalformed, "event kind %q under topic %q, want them equal", ev.Kind, frames[0])
	}
	return ev, nil
}

// checkTopic accepts 1..MaxTopic bytes of lower-case letters, digits and
// . _ -.
func checkTopic(t []byte) *Error {
	if len(t) == 0 || len(t) > MaxTopic {
		return errorf(0, CodeMalformed, "event topic: %d bytes, want 1 to %d", len(t), MaxTopic)
	}
	for i, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errorf(0, CodeMalformed, "event topic %q: byte %d is %q, want lower-case letters, digits and . _ -", clip(t), i, c)
		}
	}
	return nil
}
