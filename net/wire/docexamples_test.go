package wire

import (
	"time"

	"drover/coord/id"
)

// docExamples are the messages docs/PROTOCOL.md shows byte for byte, in
// the order of its hexdump blocks.
func docExamples() []Message {
	k := id.Key{Crawler: "news", Processor: "html", URL: "https://example.com/"}
	return []Message{
		&Submit{Req: 42, Jobs: []SubmitItem{{Key: k, Headers: Headers{{"lang", "en"}}, Payload: []byte(`{"depth":1}`)}}},
		&Submitted{Req: 42, Items: []SubmittedItem{{Status: SubmitAccepted, JobID: 7, Fingerprint: k.Fingerprint()}}},
		&Hello{Req: 1, Role: RoleWorker, ID: "w1", Host: "box", Slots: 4, Heartbeat: time.Second,
			Headers: Headers{{"lang", "en"}}},
	}
}
