package wire

// Command identifies a DRV/2 command. On the wire it is the upper-case ASCII
// name that String returns (frame 1 of every message).
type Command uint8

// The commands of DRV/2.
const (
	CmdHello      Command = iota + 1 // client -> server: open a session
	CmdWelcome                       // server -> client: session accepted
	CmdHeartbeat                     // both: I am alive
	CmdDisconnect                    // both: the session ends
	CmdError                         // both: a message could not be processed
	CmdRequest                       // client -> server: ledger request, batch of keys
	CmdQueue                         // client -> server: ledger queue, batch of keys
	CmdDone                          // client -> server: ledger done, batch of keys with outcomes
	CmdVerdicts                      // server -> client: one verdict per key of REQUEST/QUEUE/DONE
	CmdAnswer                        // server -> client: late verdicts for keys that got "wait"
	CmdSubmit                        // client -> server: batch of jobs (request+queue+enqueue)
	CmdSubmitted                     // server -> client: one reply per submitted job
	CmdJob                           // server -> worker: batch of jobs to run
	CmdCancel                        // server -> worker: stop these jobs
	CmdResult                        // worker -> server: batch of job results
	CmdResultOK                      // server -> worker: results recorded
	CmdProgress                      // worker -> server: progress text of a running job
	CmdQuery                         // console -> server: a window of a view (JSON admin.Query)
	CmdPage                          // server -> console: the window (JSON admin.Page)
	CmdStatus                        // console -> server: ask for the totals
	CmdTotals                        // server -> console: the totals (JSON admin.Totals)
	CmdAction                        // console -> server: an operator action (JSON admin.Action)
	CmdActed                         // server -> console: what it did (JSON admin.ActionResult)
	CmdChanged                       // server -> console: state changed, query again
	CmdRobots                        // both (peers): one origin's robots.txt, shared by the fleet

	cmdLimit // one past the last command
)

// Side says which end of a connection may send a command.
type Side uint8

// The sides. A command sent by both has Client|Server.
const (
	Client Side = 1 << iota // the DEALER end: worker, producer, console
	Server                  // the ROUTER end: drover serve
)

// Sockets says on which server socket a command is used.
type Sockets uint8

// The sockets. A command used on both has Peers|Admin.
const (
	Peers Sockets = 1 << iota // the peers ROUTER (workers and producers)
	Admin                     // the admin ROUTER (consoles and CLI)
)

type commandInfo struct {
	name    string
	body    bool // a body frame follows the request id
	json    bool // the body is JSON (admin commands)
	from    Side
	sockets Sockets
	frame   []byte // name as a frame, shared: never modify
}

var commands = [cmdLimit]commandInfo{
	CmdHello:      {name: "HELLO", body: true, from: Client, sockets: Peers | Admin},
	CmdWelcome:    {name: "WELCOME", body: true, from: Server, sockets: Peers | Admin},
	CmdHeartbeat:  {name: "HEARTBEAT", from: Client | Server, sockets: Peers | Admin},
	CmdDisconnect: {name: "DISCONNECT", body: true, from: Client | Server, sockets: Peers | Admin},
	CmdError:      {name: "ERROR", body: true, from: Client | Server, sockets: Peers | Admin},
	CmdRequest:    {name: "REQUEST", body: true, from: Client, sockets: Peers},
	CmdQueue:      {name: "QUEUE", body: true, from: Client, sockets: Peers},
	CmdDone:       {name: "DONE", body: true, from: Client, sockets: Peers},
	CmdVerdicts:   {name: "VERDICTS", body: true, from: Server, sockets: Peers},
	CmdAnswer:     {name: "ANSWER", body: true, from: Server, sockets: Peers},
	CmdSubmit:     {name: "SUBMIT", body: true, from: Client, sockets: Peers},
	CmdSubmitted:  {name: "SUBMITTED", body: true, from: Server, sockets: Peers},
	CmdJob:        {name: "JOB", body: true, from: Server, sockets: Peers},
	CmdCancel:     {name: "CANCEL", body: true, from: Server, sockets: Peers},
	CmdResult:     {name: "RESULT", body: true, from: Client, sockets: Peers},
	CmdResultOK:   {name: "RESULT-OK", body: true, from: Server, sockets: Peers},
	CmdProgress:   {name: "PROGRESS", body: true, from: Client, sockets: Peers},
	CmdQuery:      {name: "QUERY", body: true, json: true, from: Client, sockets: Admin},
	CmdPage:       {name: "PAGE", body: true, json: true, from: Server, sockets: Admin},
	CmdStatus:     {name: "STATUS", from: Client, sockets: Admin},
	CmdTotals:     {name: "TOTALS", body: true, json: true, from: Server, sockets: Admin},
	CmdAction:     {name: "ACTION", body: true, json: true, from: Client, sockets: Admin},
	CmdActed:      {name: "ACTED", body: true, json: true, from: Server, sockets: Admin},
	CmdChanged:    {name: "CHANGED", from: Server, sockets: Admin},
	CmdRobots:     {name: "ROBOTS", body: true, from: Client | Server, sockets: Peers},
}

func init() {
	for c := Command(1); c < cmdLimit; c++ {
		commands[c].frame = []byte(commands[c].name)
	}
}

// Commands lists every command of DRV/2 in the order of the constants.
func Commands() []Command {
	all := make([]Command, 0, cmdLimit-1)
	for c := Command(1); c < cmdLimit; c++ {
		all = append(all, c)
	}
	return all
}

// Valid reports whether c is a command of DRV/2.
func (c Command) Valid() bool { return c > 0 && c < cmdLimit }

// String is the command's name as it appears on the wire.
func (c Command) String() string {
	if !c.Valid() {
		return "Command(" + itoa(uint64(c)) + ")"
	}
	return commands[c].name
}

// HasBody reports whether messages of this command carry a body frame.
func (c Command) HasBody() bool { return c.Valid() && commands[c].body }

// From says which side may send the command.
func (c Command) From() Side {
	if !c.Valid() {
		return 0
	}
	return commands[c].from
}

// On says on which server socket the command is used.
func (c Command) On() Sockets {
	if !c.Valid() {
		return 0
	}
	return commands[c].sockets
}

// lookupCommand maps a command frame to its Command; the switch on
// string(b) does not allocate.
func lookupCommand(b []byte) Command {
	switch string(b) {
	case "HELLO":
		return CmdHello
	case "WELCOME":
		return CmdWelcome
	case "HEARTBEAT":
		return CmdHeartbeat
	case "DISCONNECT":
		return CmdDisconnect
	case "ERROR":
		return CmdError
	case "REQUEST":
		return CmdRequest
	case "QUEUE":
		return CmdQueue
	case "DONE":
		return CmdDone
	case "VERDICTS":
		return CmdVerdicts
	case "ANSWER":
		return CmdAnswer
	case "SUBMIT":
		return CmdSubmit
	case "SUBMITTED":
		return CmdSubmitted
	case "JOB":
		return CmdJob
	case "CANCEL":
		return CmdCancel
	case "RESULT":
		return CmdResult
	case "RESULT-OK":
		return CmdResultOK
	case "PROGRESS":
		return CmdProgress
	case "QUERY":
		return CmdQuery
	case "PAGE":
		return CmdPage
	case "STATUS":
		return CmdStatus
	case "TOTALS":
		return CmdTotals
	case "ACTION":
		return CmdAction
	case "ACTED":
		return CmdActed
	case "CHANGED":
		return CmdChanged
	case "ROBOTS":
		return CmdRobots
	}
	return 0
}

// itoa formats without fmt, for String methods on hot paths.
func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}
