package nodeproc

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

func TestUsageOfThisProcess(t *testing.T) {
	u, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS == 0 || u.VMS < u.RSS || u.CPUSeconds < 0 {
		t.Fatalf("usage %+v", u)
	}
}

func TestFreePortsAndWaitListening(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil || len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] {
		t.Fatalf("ports %v, %v", ports, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := WaitListening(ctx, "127.0.0.1:"+ports[0]); err == nil {
		t.Fatal("a port nobody listens on was reported listening")
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+ports[1])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := WaitListening(context.Background(), l.Addr().String()); err != nil {
		t.Fatal(err)
	}
}
