// Package stages times the stages of one request through the node, for
// a lockstep producer: built with -tags stagetime, every Mark adds the
// time since the previous Mark (any stage) to its stage, and every
// thousandth request the averages go to stderr; without the tag Mark is
// empty and inlined away. The sum only means something while one request
// is in flight at a time (one producer waiting for each reply): with
// more, the stages of different requests interleave.
//
//	go build -tags stagetime -o /tmp/node.st ./cmd/node
//	go run ./cmd/bench ceilings --node-bin /tmp/node.st --dir /dev/shm/st --rounds 1 --batches 3000
//	grep -B13 -- '^--' /dev/shm/st/node.log | tail -13
//
// (docs/benchmarks.md, "The batch checked while it arrives").
package stages

// Stage is a point on a send's path; Mark(s) closes the interval since
// the previous point.
type Stage int

const (
	Header      Stage = iota // a large frame's header is read (the turnaround since the last reply)
	BodyRead                 // its body is read
	ConnActor                // the connection actor takes it
	Checked                  // the batch verdict is in hand
	PartitionIn              // the partition actor takes the send
	WriteBehind              // the segment write is handed off
	WriteStart               // the write's goroutine runs
	WriteDone                // the segment write returned
	Reply                    // the partition sends the reply
	ConnReply                // the connection actor takes the reply
	WriterGot                // the edge's writer takes it
	Flushed                  // the reply is on the socket
	count
)

var names = [count]string{"header", "body read", "conn actor", "checked", "partition in",
	"write behind", "write start", "write done", "reply", "conn reply", "writer got", "flushed"}

// LargeFrame is the size from which a frame's header starts a request's
// timing: sends of batches, not logins or polls.
const LargeFrame = 64 << 10
