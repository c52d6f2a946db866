package wire

// Message is one DRV/2 message: one of the types of this package, always as
// a pointer (*Hello, *Submit, *Error, ...). The set is closed.
type Message interface {
	// Command is the message's command.
	Command() Command
	// RequestID is frame 2: the id a client chose for a request, echoed by
	// the reply; 0 in messages that are not requests or replies.
	RequestID() uint64

	appendBody(w *writer)
	decodeBody(r *reader)
}

// newMessage returns an empty message of command c with request id req.
func newMessage(c Command, req uint64) Message {
	switch c {
	case CmdHello:
		return &Hello{Req: req}
	case CmdWelcome:
		return &Welcome{Req: req}
	case CmdHeartbeat:
		return &Heartbeat{Req: req}
	case CmdDisconnect:
		return &Disconnect{Req: req}
	case CmdError:
		return &Error{Req: req}
	case CmdRequest:
		return &Request{Req: req}
	case CmdQueue:
		return &Queue{Req: req}
	case CmdDone:
		return &Done{Req: req}
	case CmdVerdicts:
		return &Verdicts{Req: req}
	case CmdAnswer:
		return &Answer{Req: req}
	case CmdSubmit:
		return &Submit{Req: req}
	case CmdSubmitted:
		return &Submitted{Req: req}
	case CmdJob:
		return &Job{Req: req}
	case CmdCancel:
		return &Cancel{Req: req}
	case CmdResult:
		return &Result{Req: req}
	case CmdResultOK:
		return &ResultOK{Req: req}
	case CmdProgress:
		return &Progress{Req: req}
	case CmdQuery:
		return &Query{Req: req}
	case CmdPage:
		return &Page{Req: req}
	case CmdStatus:
		return &Status{Req: req}
	case CmdTotals:
		return &Totals{Req: req}
	case CmdAction:
		return &Action{Req: req}
	case CmdActed:
		return &Acted{Req: req}
	case CmdChanged:
		return &Changed{Req: req}
	case CmdRobots:
		return &Robots{Req: req}
	}
	return nil
}
