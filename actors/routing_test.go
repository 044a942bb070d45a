package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/client"
	"iggynode/wire"
)

// suspendMetadata stops the metadata actor's mailbox from processing
// anything until the returned function resumes it: a metadata actor busy
// for as long as the test likes.
func suspendMetadata(t *testing.T, n *Node) (resume func()) {
	t.Helper()
	proc, ok := n.system.ProcessRegistry.Get(n.refs.metadata)
	if !ok {
		t.Fatal("no metadata actor")
	}
	proc.SendSystemMessage(n.refs.metadata, &actor.SuspendMailbox{})
	var once sync.Once
	resume = func() { once.Do(func() { proc.SendSystemMessage(n.refs.metadata, &actor.ResumeMailbox{}) }) }
	t.Cleanup(resume)
	return resume
}

// connectAs logs user in to n; the client closes with the test.
// ServerBalanced: the SDK picks a Balanced send's partition itself
// otherwise, with a GetTopic, which the metadata actor answers.
func connectAs(t *testing.T, ctx context.Context, n *Node, user, password string) *client.Client {
	t.Helper()
	c, err := client.Connect(ctx, client.Options{Address: n.TCPAddr(), Username: user, Password: password, ServerBalanced: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Sends and a consumer's polls reach their partition with the metadata
// actor's mailbox stopped (DESIGN.md: routing of partition traffic does
// not queue behind metadata work), for root and for a user whose
// permissions allow it; what the view does not route (a user without the
// permission) still gets the metadata actor's answer once it runs.
func TestPartitionTrafficDoesNotWaitForTheMetadataActor(t *testing.T) {
	n := startTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := connectAs(t, ctx, n, "iggy", "iggy")
	if _, err := root.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateTopic(ctx, wire.ID(0), "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	perms := &wire.Permissions{Streams: map[uint32]wire.StreamPermissions{0: {Topics: map[uint32]wire.TopicPermissions{0: {SendMessages: true, PollMessages: true}}}}}
	if _, err := root.CreateUser(ctx, "producer", "secret12", wire.UserActive, perms); err != nil {
		t.Fatal(err)
	}
	if _, err := root.CreateUser(ctx, "nobody", "secret12", wire.UserActive, &wire.Permissions{}); err != nil {
		t.Fatal(err)
	}
	prod, nobody := connectAs(t, ctx, n, "producer", "secret12"), connectAs(t, ctx, n, "nobody", "secret12")

	resume := suspendMetadata(t, n)
	denied := make(chan error, 1)
	go func() {
		_, err := nobody.SendMessages(ctx, wire.ID(0), wire.ID(0), wire.PartitionID(0), []wire.Message{client.NewMessage([]byte("no"))})
		denied <- err
	}()
	for i, c := range []*client.Client{root, prod} {
		for _, p := range []wire.Partitioning{wire.PartitionID(1), wire.Balanced(), wire.Balanced()} {
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := c.SendMessages(sctx, wire.Named("s"), wire.Named("t"), p, []wire.Message{client.NewMessage([]byte(fmt.Sprint(i)))})
			scancel()
			if err != nil {
				t.Fatalf("client %d: send (%v) with the metadata actor stopped: %v", i, p, err)
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		polled, err := c.PollMessages(pctx, wire.SingleConsumer(wire.ID(uint32(7+i))), wire.ID(0), wire.ID(0), wire.Partition(1), wire.FirstStrategy(), 100, false)
		pcancel()
		if err != nil {
			t.Fatalf("client %d: poll with the metadata actor stopped: %v", i, err)
		}
		if polled.MessagesCount == 0 {
			t.Fatalf("client %d: the poll found none of the sends to partition 1", i)
		}
	}
	select {
	case err := <-denied:
		t.Fatalf("a send the view does not route was answered without the metadata actor: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	resume()
	select {
	case err := <-denied:
		if !errors.Is(err, wire.ErrUnauthorized) {
			t.Fatalf("a send without the permission: %v, want Unauthorized", err)
		}
	case <-ctx.Done():
		t.Fatal("the metadata actor never answered the unrouted send")
	}
}

// Topics deleted and created again while producers and consumers keep
// going: every request is answered (a send that took a deleted
// partition's route is ahead of its drop; one after the close goes to
// the metadata actor), none waits for its deadline.
func TestEveryRequestIsAnsweredWhileTopicsComeAndGo(t *testing.T) {
	n := startTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := connectAs(t, ctx, n, "iggy", "iggy")
	if _, err := admin.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, wire.ID(0), "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var answered sync.Map
	for w := range 4 {
		c := connectAs(t, ctx, n, "iggy", "iggy")
		wg.Add(1)
		go func() {
			defer wg.Done()
			count := 0
			for {
				select {
				case <-stop:
					answered.Store(w, count)
					return
				default:
				}
				rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
				var err error
				if w%2 == 0 {
					_, err = c.SendMessages(rctx, wire.Named("s"), wire.Named("t"), wire.Balanced(), []wire.Message{client.NewMessage([]byte("m"))})
				} else {
					_, err = c.PollMessages(rctx, wire.SingleConsumer(wire.ID(1)), wire.Named("s"), wire.Named("t"), wire.Partition(uint32(count%2)), wire.FirstStrategy(), 10, false)
				}
				rcancel()
				if errors.Is(err, context.DeadlineExceeded) {
					errs <- fmt.Errorf("worker %d: request %d was never answered", w, count)
					return
				}
				count++
			}
		}()
	}
	for range 15 {
		time.Sleep(20 * time.Millisecond)
		if err := admin.DeleteTopic(ctx, wire.ID(0), wire.Named("t")); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CreateTopic(ctx, wire.ID(0), "t", 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	answered.Range(func(w, count any) bool {
		if count.(int) == 0 {
			t.Errorf("worker %v made no request", w)
		}
		return true
	})
}
