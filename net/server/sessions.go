package server

import "drover/coord/id"

// sessions is the Server's sessions part: who is connected on the peers
// and admin sockets, by routing id and by session, and which live session
// holds each peer id. The reactor goroutine owns it.
type sessions struct {
	ident  map[string]id.Session // peers routing id -> session
	peer   map[id.Session]*peer
	cons   map[string]*console // admin routing id -> console session
	next   id.Session
	owners map[ownerKey]id.Session // the live session holding each peer id (auth.go)
}
